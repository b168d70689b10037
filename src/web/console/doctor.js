// The Doctor view: the findings of the agent's last doctor run, each with
// its evidence, what it means and what to do.
import { getJson } from "./api.js";
import { byId, fill, h } from "./dom.js";

function finding(f) {
  return h("div", { class: "finding " + f.severity }, h("b", {}, `${f.severity}: ${f.summary}`),
    f.gpu !== null ? ` (GPU ${f.gpu})` : "", h("div", {}, "evidence: ", f.evidence), h("div", {}, "meaning: ", f.meaning),
    h("div", {}, "next: ", f.action));
}

export async function renderDoctor() {
  byId("main").replaceChildren(h("h2", {}, "Doctor"), h("div", { id: "doctor" }, h("p", { class: "muted" }, "loading…")));
  try {
    const d = await getJson("api/v1/doctor");
    fill("doctor", h("p", { class: "muted" }, `${d.runs} runs; findings of the last:`),
      h("div", {}, d.findings.length ? d.findings.map(finding) : h("p", {}, "nothing found: every check passed")));
  } catch (e) {
    fill("doctor", h("p", { class: "error" }, e.message));
  }
}

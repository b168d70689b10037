// The agent's read-only API (docs/web.md), and its login when it asks for a
// token.
import { byId, h } from "./dom.js";

// The JSON at `path`; throws with the agent's message when it refuses.
export async function getJson(path) {
  const r = await fetch(path, { credentials: "same-origin" });
  if (r.status === 401) {
    showLogin();
    throw new Error("a token is needed");
  }
  const j = await r.json();
  if (!r.ok) {
    const e = new Error(j.error ? j.error.message : r.statusText);
    e.status = r.status;  // 404: a view the agent is not configured for.
    throw e;
  }
  return j;
}

// The login form: the token goes to api/v1/login once, and comes back as an
// HttpOnly cookie.
export function showLogin() {
  if (byId("token")) return;
  const input = h("input", { id: "token", type: "password", size: 40, placeholder: "token ([http] auth file)" });
  const message = h("p", { class: "error" });
  const logIn = async () => {
    const r = await fetch("api/v1/login", { headers: { Authorization: "Bearer " + input.value } });
    if (r.ok) location.reload();
    else message.textContent = "refused: " + (await r.text());
  };
  byId("main").replaceChildren(h("h2", {}, "This agent asks for a token"),
    h("p", {}, "Paste the token from the agent's [http] auth file. It is kept in an HttpOnly cookie for this site only."),
    input, " ", h("button", { onclick: logIn }, "Log in"), message);
}

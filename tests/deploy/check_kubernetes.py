#!/usr/bin/env python3
"""Checks deploy/kubernetes/ (make test): every manifest parses and the
kustomization names them all; the DaemonSet has what the device plugin and
the exporter need; Service, ServiceMonitor and container agree on the
metrics port; the PrometheusRule holds exactly deploy/prometheus/tarmac.rules.yml;
the agent's config passes `tarmac config check`; the image is built from the .deb.

Usage: check_kubernetes.py SOURCE_DIR TARMAC_BINARY
"""
import os
import subprocess
import sys

import yaml

problems = []


def check(ok, what):
    if not ok:
        problems.append(what)


def load(root, name):
    with open(os.path.join(root, "deploy/kubernetes", name)) as f:
        return yaml.safe_load(f)


def main():
    root, tarmac = sys.argv[1], sys.argv[2]
    kube = os.path.join(root, "deploy/kubernetes")
    k = load(root, "kustomization.yaml")
    check(k.get("kind") == "Kustomization", "kustomization.yaml: kind Kustomization")
    listed = set(k.get("resources", []))
    on_disk = {n for n in os.listdir(kube) if n.endswith(".yaml") and n != "kustomization.yaml"}
    check(listed == on_disk, f"kustomization resources {sorted(listed)} != manifests {sorted(on_disk)}")
    docs = {n: load(root, n) for n in listed}
    by_kind = {d["kind"]: d for d in docs.values()}
    for kind in ("DaemonSet", "Service", "ServiceMonitor", "PrometheusRule", "Namespace"):
        check(kind in by_kind, f"no {kind}")
    config_files = [f for g in k.get("configMapGenerator", []) for f in g.get("files", [])]
    check(config_files == ["tarmac.toml"], "the config map is made from tarmac.toml")

    ds = by_kind["DaemonSet"]
    pod = ds["spec"]["template"]["spec"]
    check(pod.get("hostPID") is True, "DaemonSet: hostPID (process attribution)")
    check(any(t.get("key") == "nvidia.com/gpu" for t in pod.get("tolerations", [])),
          "DaemonSet: tolerates the nvidia.com/gpu taint")
    selector = ds["spec"]["selector"]["matchLabels"]
    labels = ds["spec"]["template"]["metadata"]["labels"]
    check(all(labels.get(key) == v for key, v in selector.items()), "DaemonSet: the selector matches the pod labels")
    (c,) = pod["containers"]
    env = {e["name"]: e for e in c.get("env", [])}
    check(env.get("NODE_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "spec.nodeName",
          "NODE_NAME from the downward API (spec.nodeName)")
    requests = c.get("resources", {}).get("requests", {})
    check("memory" in requests and "cpu" in requests, "resource requests for memory and cpu")
    check("memory" in c.get("resources", {}).get("limits", {}), "a memory limit")
    mounts = {m["mountPath"]: m for m in c.get("volumeMounts", [])}
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    for path, read_only in (("/var/lib/kubelet/device-plugins", False), ("/var/lib/kubelet/pod-resources", True)):
        m = mounts.get(path)
        check(m is not None, f"mounts {path}")
        if m:
            check(bool(m.get("readOnly", False)) == read_only, f"{path} read-only: {read_only}")
            v = volumes.get(m["name"], {})
            check(v.get("hostPath", {}).get("path") == path, f"{path} is the host's folder")
    for m in mounts.values():
        check(m["name"] in volumes, f"volume {m['name']} exists")
    runtime = [m for p, m in mounts.items() if p.startswith("/run/containerd")]
    check(runtime and all(m.get("readOnly") for m in runtime), "the container runtime's state, read-only")
    check(c.get("livenessProbe", {}).get("httpGet", {}).get("path") == "/health", "liveness on /health")
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    check("metrics" in ports, "a metrics port")

    svc = by_kind["Service"]
    check(any(p.get("targetPort") in ("metrics", ports.get("metrics")) for p in svc["spec"]["ports"]),
          "Service targets the metrics port")
    check(all(labels.get(key) == v for key, v in svc["spec"]["selector"].items()), "Service selects the agent's pods")
    sm = by_kind["ServiceMonitor"]
    svc_port_names = {p["name"] for p in svc["spec"]["ports"]}
    check(all(e.get("port") in svc_port_names for e in sm["spec"]["endpoints"]), "ServiceMonitor names a Service port")
    check(all(sm["spec"]["selector"]["matchLabels"].get(key) == v for key, v in svc["metadata"]["labels"].items()),
          "ServiceMonitor selects the Service")

    with open(os.path.join(root, "deploy/prometheus/tarmac.rules.yml")) as f:
        rules = yaml.safe_load(f)
    check(by_kind["PrometheusRule"]["spec"]["groups"] == rules["groups"],
          "PrometheusRule differs from deploy/prometheus/tarmac.rules.yml: run scripts/gen-prometheusrule")

    r = subprocess.run([tarmac, "config", "check", os.path.join(kube, "tarmac.toml")], capture_output=True, text=True)
    check(r.returncode == 0, f"tarmac config check deploy/kubernetes/tarmac.toml: {r.stdout}{r.stderr}")
    toml_text = open(os.path.join(kube, "tarmac.toml")).read()
    check("enabled = true" in toml_text.split("[kubernetes]")[-1], "the config enables [kubernetes]")

    with open(os.path.join(root, "deploy/container/Dockerfile")) as f:
        dockerfile = f.read()
    check("tarmac_" in dockerfile and ".deb" in dockerfile, "the image is built from the .deb")
    check(c["command"][0] == "/usr/bin/tarmacd", "the container runs the installed tarmacd")

    for p in problems:
        print("deploy/kubernetes:", p)
    print("deploy/kubernetes: ok" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

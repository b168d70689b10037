#!/usr/bin/env python3
"""Checks the built manual pages as man shows them.

Usage: check_man_pages.py BUILD_DIR SOURCE_DIR

For tarmac(1), tarmacd(8) and tarmac.toml(5) under BUILD_DIR/man: groff
warns of nothing (but lines it cannot adjust), `man -l` renders the page
with its NAME and SEE ALSO sections, and the page names everything it
documents: every command `tarmac --help` lists (and their subcommands), every
option of `tarmacd --help`, and every key of every section of the config
(docs/config.md's tables, which the page is made from and must not lose).
Exits 1 naming each problem.
"""
import os
import re
import subprocess
import sys

build, source = sys.argv[1], sys.argv[2]
man_dir = os.path.join(build, "man")
bin_dir = os.path.join(build, "bin")
env = dict(os.environ, MANWIDTH="100", COLUMNS="200", LC_ALL="C.UTF-8")
for name in ("TARMAC_SOCKET", "TARMAC_BACKEND"):
    env.pop(name, None)
problems = []


def run(argv):
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)


def rendered(page):
    path = os.path.join(man_dir, page)
    if not os.path.exists(path):
        problems.append(f"{path}: not built (pandoc missing?)")
        return ""
    lint = run(["groff", "-man", "-t", "-z", "-ww", "-Wbreak", path])
    for line in lint.stderr.splitlines():
        problems.append(f"{page}: groff: {line}")
    shown = run(["man", "--no-hyphenation", "--no-justification", "-l", path])
    if shown.returncode != 0:
        problems.append(f"{page}: man -l exits {shown.returncode}: {shown.stderr.strip()}")
    text = shown.stdout
    # One word per line in man's text has its hyphens and line breaks; the
    # checks below look for names in a text joined back into one line.
    for heading in ("NAME", "SEE ALSO"):
        if not re.search(r"^" + heading + r"$", text, re.M):
            problems.append(f"{page}: no {heading} section")
    return " ".join(text.split())


def subcommands(words):
    text = run([os.path.join(bin_dir, "tarmac")] + words + ["--help"]).stdout
    out, section = [], None
    for line in text.splitlines():
        if re.match(r"^[A-Z][a-z]+:", line):
            section = line.split(":")[0]
            continue
        m = re.match(r"^  ([a-z][a-z0-9-]*)\s", line)
        if section == "Subcommands" and m:
            out.append(m.group(1))
    return out


# tarmac(1): every command and subcommand.
tarmac = rendered("tarmac.1")
commands = subcommands([])
if len(commands) < 10:
    problems.append(f"tarmac --help lists {len(commands)} commands; expected the whole table")
for command in commands:
    if f"tarmac {command}" not in tarmac and f"{command}," not in tarmac:
        problems.append(f"tarmac.1 never names `tarmac {command}`")
    for sub in subcommands([command]):
        if not re.search(r"\b" + re.escape(sub) + r"\b", tarmac):
            problems.append(f"tarmac.1 never names `tarmac {command} {sub}`")
if "EXIT STATUS" not in tarmac or " 69 " not in tarmac:
    problems.append("tarmac.1: no EXIT STATUS section with the agent's code 69")

# tarmacd(8): every option the agent takes.
tarmacd = rendered("tarmacd.8")
agent_help = run([os.path.join(bin_dir, "tarmacd"), "--help"]).stdout
options = set(re.findall(r"^\s+(?:-\w,)?(--[a-z][a-z0-9-]*)", agent_help, re.M))
if len(options) < 5:
    problems.append(f"tarmacd --help lists {len(options)} options")
for option in sorted(options):
    if option not in tarmacd:
        problems.append(f"tarmacd.8 never names {option}")
for word in ("SIGHUP", "/var/lib/tarmac"):
    if word not in tarmacd:
        problems.append(f"tarmacd.8 never says {word}")

# tarmac.toml(5): every section and key of the config reference.
config = rendered("tarmac.toml.5")
doc = open(os.path.join(source, "docs", "config.md"), encoding="utf-8").read()
keys = 0
for part in re.split(r"^## ", doc, flags=re.M)[1:]:
    title = part.split("\n", 1)[0].strip().strip("`")
    if title.startswith("[") and title not in config:
        problems.append(f"tarmac.toml.5 has no section {title}")
    for row in re.findall(r"^\|\s*`([a-z_]+)`\s*\|", part, re.M):
        keys += 1
        if not re.search(r"\b" + re.escape(row) + r"\b", config):
            problems.append(f"tarmac.toml.5: {title} lost its key {row}")
if keys < 20:
    problems.append(f"docs/config.md: found {keys} keys in its tables; expected the whole reference")

for p in problems:
    print(p)
print(f"check_man_pages: {len(commands)} commands, {len(options)} agent options, {keys} config keys, "
      f"{len(problems)} problem{'s' if len(problems) != 1 else ''}")
sys.exit(1 if problems else 0)

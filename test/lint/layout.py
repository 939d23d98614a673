#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""layout: the rules the source tree keeps (docs/architecture.md).

  - no file in src/ is longer than 800 lines;
  - calls go down: a file includes headers of its own layer or of the
    layers below it, never above
        core < io < transport < engine < send, recv < api < cli
    (include/pxfer/pxfer.h, the public API's types, is below them all);
    send and recv do not include each other, nor do the transports
    (transport/tcp, transport/rdma), and a transport's private headers
    are included only inside it; the command line includes none of a
    transport's own headers (it reaches them through the registry and
    their ops tables, pxfer doctor through transport/diag.h);
  - no include cycle between modules (a module is a .c file and its .h);
  - no mutable state at file scope in the library (a static variable
    that is not const, outside src/cli/, which is one command in one
    process): calls run at once, each with what it owns, and what the
    process shares is listed in SHARED, with why.

Exit status: 0 when the tree keeps them all, 1 with one line per breach
(file:line and the rule), as test/runtests.sh expects.
"""
import os
import re
import sys

MAX_LINES = 800
LAYER = {"core": 0, "io": 1, "transport": 2, "engine": 3, "send": 4,
         "recv": 4, "api": 5, "cli": 6}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')

# The library's file-scope state, shared by the calls of a process
# (docs/architecture.md, "What a call owns"): file -> variables
SHARED = {
    # the log of the threads no call owns (the command, the RDMA thread)
    "core/log.c": {"log_default"},
    # one RDMA context per process, reference-counted by the calls
    "transport/rdma/ctx.c": {"ctx_lock", "the_ctx"},
    # probe results (atomic): io_uring missing is said once per process
    "io/io.c": {"fallback_warned"},
    # openat2 forced off (atomic; a test's switch)
    "recv/path.c": {"use_fallback"},
}
# a static variable at the start of a line: not a function, not const,
# not thread-local (a thread's own); its name is the last word before
# the first '=', '[' or ';'
STATIC = re.compile(r'^static\s+(?!inline\b)(?!.*\bconst\b(?![^=;]*\*))'
                    r'(?!.*\b(?:__thread|_Thread_local)\b)([^(=;]*?)'
                    r'(\w+)\s*(?:\[[^]]*\])?\s*(?:=|;)')
# the same without static: a global the library would share (and export);
# not a declaration of a struct (struct foo; or struct foo {)
GLOBAL = re.compile(r'^(?!static\b|extern\b|typedef\b|const\b|enum\b|union\b)'
                    r'(?!struct\s+\w+\s*[{;])(?!.*\bconst\b(?![^=;]*\*))'
                    r'(?!.*\b(?:__thread|_Thread_local)\b)[A-Za-z_][^(=;:]*?'
                    r'\b(\w+)\s*(?:\[[^]]*\])?\s*(?:=|;)')
FNPTR = re.compile(r'^static\s+(?!.*\bconst\b)[^=;(]*\(\s*\*\s*'
                   r'(?:_Atomic\s+)?(\w+)\s*\)')

top = os.environ.get("PXFER_TOP") or os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))
src = os.path.join(top, "src")
problems = []


def area(path):
    """(layer name, sub-area) of a path relative to src/"""
    parts = path.split("/")
    if parts[0] == "transport" and len(parts) > 2:
        return "transport", parts[1]	# tcp, rdma
    return parts[0], None


def resolve(inc, here):
    """an include as a path relative to src/, or None when outside"""
    if inc.startswith("pxfer/"):
        return None			# the public header: below everything
    if os.path.exists(os.path.join(src, inc)):
        return inc
    local = os.path.join(os.path.dirname(here), inc)
    if os.path.exists(os.path.join(src, local)):
        return os.path.normpath(local)
    return None


files = []
for root, _, names in os.walk(src):
    for n in sorted(names):
        if n.endswith((".c", ".h")):
            files.append(os.path.relpath(os.path.join(root, n), src))
files.sort()

modules = {}			# module -> set of modules it includes
for f in files:
    with open(os.path.join(src, f), encoding="utf-8") as fh:
        lines = fh.readlines()
    if len(lines) > MAX_LINES:
        problems.append("src/%s: %d lines, more than %d: split it by concern"
                        % (f, len(lines), MAX_LINES))
    mod = os.path.splitext(f)[0]
    modules.setdefault(mod, set())
    layer, sub = area(f)
    for no, line in enumerate(lines, 1):
        m = STATIC.match(line) or FNPTR.match(line) or GLOBAL.match(line)
        if not m or layer == "cli":
            continue
        name = m.group(m.lastindex)
        if name not in SHARED.get(f, ()):
            problems.append("src/%s:%d: '%s' is mutable state at file scope:"
                            " make it the call's (a field of what it owns),"
                            " or const; state the process must share goes"
                            " in test/lint/layout.py's SHARED, with why"
                            % (f, no, name))
    for no, line in enumerate(lines, 1):
        m = INCLUDE.match(line)
        if not m:
            continue
        target = resolve(m.group(1), f)
        if target is None:
            continue
        where = "src/%s:%d" % (f, no)
        tlayer, tsub = area(target)
        if LAYER[tlayer] > LAYER[layer]:
            problems.append("%s: %s (%s) includes %s, a layer above it"
                            % (where, layer, f, target))
        elif LAYER[tlayer] == LAYER[layer] and tlayer != layer:
            problems.append("%s: %s includes %s: the two sides share only"
                            " what lies below them" % (where, f, target))
        if tlayer == "transport" and tsub and tsub != sub:
            exported = target == "transport/%s/%s.h" % (tsub, tsub)
            if sub is not None or not exported:
                problems.append("%s: %s includes %s, another transport's"
                                " private header" % (where, f, target))
        if layer == "cli" and tlayer == "transport" and tsub:
            problems.append("%s: %s includes %s: the command line reaches a"
                            " transport through its ops table (pxfer doctor:"
                            " transport/diag.h)" % (where, f, target))
        tmod = os.path.splitext(target)[0]
        if tmod != mod:
            modules[mod].add(tmod)

# include cycles between modules: depth-first search, reporting each once
state, stack, seen_cycles = {}, [], set()


def visit(m):
    state[m] = 1
    stack.append(m)
    for n in sorted(modules.get(m, ())):
        if state.get(n) == 1:
            cycle = stack[stack.index(n):] + [n]
            key = frozenset(cycle)
            if key not in seen_cycles:
                seen_cycles.add(key)
                problems.append("include cycle: " + " -> ".join(cycle))
        elif n in modules and not state.get(n):
            visit(n)
    stack.pop()
    state[m] = 2


for m in sorted(modules):
    if not state.get(m):
        visit(m)

for p in problems:
    print(p)
print("layout: %d files in src/, %d modules: %s" % (
    len(files), len(modules),
    "%d problem(s)" % len(problems) if problems else "the rules hold"))
sys.exit(1 if problems else 0)

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
  - no circle within a folder: of the .c files of one folder (outside
    src/cli/, one command), none calls (or names) a function another
    defines that calls it back, directly or round a longer circle; the
    lower file (the message layer, the journal's format, the device)
    never uses the upper one. A circle is reported once, at one call on
    it; CIRCLES_LEFT lists the calls that still close one, until broken;
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
    # a ring's serial (atomic): tells a ring from an older one mapped at
    # the same address, for the registrations of another connection
    "core/ring.c": {"ring_serial"},
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

# Calls that close a circle still, each to be broken (docs/architecture.md,
# "Where things live"): caller -> callee, as paths in src/. Temporary: a
# call listed here that no longer closes a circle is a problem too, so
# that the list only shrinks.
CIRCLES_LEFT = set()

# Circles within a folder: within one folder, file A "uses" file B when it
# calls (or names) a non-static function B defines; the two must not use
# each other, directly or round a longer circle. Includes are not calls
# (a folder's files share private headers); include cycles between
# modules are the rule above's. A function's name is matched as a word
# in A's code outside comments and strings; a name A defines itself
# (static or not, or as a macro) is A's own, and a name several files of
# the folder define is no one's (a choice the build makes). A
# function-like macro or a static inline function of a header in the
# folder stands for what its body names. src/cli/ is one command, and is
# left out.
NOISE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"'
                   r"|'(?:\\.|[^'\\\n])*'", re.S)
WORD = re.compile(r'[A-Za-z_]\w*')
TOKEN = re.compile(r'[A-Za-z_]\w*|[{}();=]')
DEFINE = re.compile(r'^\s*#\s*define\s+(\w+)(\(?)', re.M)
PREPROC = re.compile(r'^\s*#(?:[^\n]*\\\n)*[^\n]*', re.M)


def blank(m):
    """a comment or literal as spaces, its newlines kept"""
    return re.sub(r'[^\n]', ' ', m.group(0))


def functions(code):
    """(name, static, body's words) of each function defined in code"""
    code = PREPROC.sub(blank, code)
    found, depth, start, name, last, words = [], 0, 0, None, None, None
    decl = []
    for m in TOKEN.finditer(code):
        t = m.group(0)
        if depth == 0:
            if t == "{" and last == ")" and name:
                words = set()
                found.append((name, "static" in decl, words))
            elif t in (";", "}"):
                decl, name = [], None
            elif t == "(" and last not in (None, ")") and name is None \
                    and WORD.fullmatch(last):
                name = last
            elif t != "{":
                decl.append(t)
        elif words is not None and WORD.fullmatch(t):
            words.add(t)
        if t == "{":
            depth += 1
        elif t == "}":
            depth -= 1
            if depth == 0:
                words, decl, name = None, [], None
                t = "}"
        last = t
    return found


def circles():
    folders = {}
    for f in files:
        d = os.path.dirname(f)
        if d.split("/")[0] != "cli":
            folders.setdefault(d, []).append(f)
    for d, names in sorted(folders.items()):
        text, owner, expand, defs = {}, {}, {}, {}
        for f in names:
            with open(os.path.join(src, f), encoding="utf-8") as fh:
                code = NOISE.sub(blank, fh.read())
            text[f] = code
            fns = functions(code)
            macros = {m.group(1) for m in DEFINE.finditer(code)}
            defs[f] = {n for n, _, _ in fns} | macros
            if f.endswith(".h"):
                for n, static, words in fns:
                    expand[n] = words
                for m in DEFINE.finditer(code):
                    if m.group(2):
                        body = code[m.end():].split("\n")[0]
                        expand[m.group(1)] = set(WORD.findall(body))
                continue
            for n, static, _ in fns:
                if not static:
                    owner[n] = None if n in owner else f
        mod = lambda f: os.path.splitext(f)[0]
        uses = {}		# module -> {module: (line, what)}
        for f in names:
            if not f.endswith(".c"):
                continue
            here = uses.setdefault(mod(f), {})
            for no, line in enumerate(text[f].split("\n"), 1):
                todo = WORD.findall(line)
                seen = set()
                while todo:
                    w = todo.pop()
                    if w in seen or w in defs[f]:
                        continue
                    seen.add(w)
                    todo.extend(expand.get(w, ()))
                    b = owner.get(w)
                    if b and b != f:
                        old = here.get(mod(b))
                        if old is None or old[0] is None:
                            here[mod(b)] = ("src/%s:%d" % (f, no), w)
        report(d, uses)


def report(d, uses):
    """one line per circle a call closes: the shortest circles first, each
    reported once and its call then set aside, so that a circle that
    remains is one more"""
    for a, b in [(a, b) for a in uses for b in uses[a]]:
        if (a + ".c", b + ".c") in CIRCLES_LEFT and uses[a][b][0]:
            if back(uses, b, a) is not None:
                left.discard((a + ".c", b + ".c"))
    for a, b in [(a, b) for a in uses for b in uses[a]]:
        if (a + ".c", b + ".c") in CIRCLES_LEFT:
            del uses[a][b]
    calls = [(where, a, b, w) for a in uses
             for b, (where, w) in uses[a].items() if where and b in uses]
    ways = []
    for where, a, b, w in calls:
        path = back(uses, b, a)
        if path is not None:
            ways.append((len(path), where, a, b, w))
    for _, where, a, b, w in sorted(ways):
        path = back(uses, b, a)
        if path is None:
            continue		# broken by one reported before
        del uses[a][b]
        problems.append(
            "%s: a circle within src/%s/: %s uses %s (%s)%s: the lower file"
            " must not use the upper one: move what closes the circle"
            " where it belongs, or pass a callback or a value down"
            % (where, d, base(a), base(b), w,
               "".join(", which uses %s (%s)" % (base(y), how)
                       for y, how in path)))


def base(m):
    return os.path.basename(m) + ".c"


def back(uses, start, goal):
    """the shortest way from start to goal: [(module, how)], or None"""
    prev, todo = {start: None}, [start]
    for v in todo:
        for w in sorted(uses[v]):
            if w in uses and w not in prev:
                prev[w] = v
                todo.append(w)
    if goal not in prev:
        return None
    path, v = [], goal
    while v != start:
        u = prev[v]
        where, w = uses[u][v]
        path.append((v, w if where else "includes its header"))
        v = u
    return path[::-1]


left = set(CIRCLES_LEFT)
circles()
for a, b in sorted(left):
    problems.append("test/lint/layout.py: CIRCLES_LEFT lists src/%s calling"
                    " src/%s, which closes no circle now: take it out"
                    % (a, b))

for p in problems:
    print(p)
print("layout: %d files in src/, %d modules: %s" % (
    len(files), len(modules),
    "%d problem(s)" % len(problems) if problems else "the rules hold"))
sys.exit(1 if problems else 0)

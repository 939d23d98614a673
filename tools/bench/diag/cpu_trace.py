#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cpu_trace.py TRACE... - what each CPU did in a trace from cpu_trace.sh.

Per CPU: the threads that ran the most and the share of time in NET_RX
and TASKLET softirqs (where rxe's packet work runs); then in whose context
those softirqs ran (ksoftirqd, or inline in a thread that sent packets,
e.g. inside ibv_post_send); then a timeline in 10 ms steps of which CPU
carried that work: 0 or 1 (one CPU more than half the step, the other
under a fifth), B (both over a fifth), . (neither over half: the work
was then done by a thread itself, inside ibv_post_send, whose softirqs
are short, one packet each; or there was none).
"""
import collections
import re
import sys

LINE = re.compile(r'^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+): (\w+): (.*)$')
STEP = 0.01


def analyse(path):
    ev = []
    with open(path) as f:
        for line in f:
            m = LINE.match(line)
            if m:
                ev.append((float(m.group(4)), int(m.group(3)), m.group(5),
                           m.group(6), m.group(1)))
    if not ev:
        print(path, ': no events')
        return
    t0, t1 = ev[0][0], ev[-1][0]
    span = t1 - t0
    ncpu = max(e[1] for e in ev) + 1
    cur, since = {}, {}
    run = collections.Counter()
    soft = collections.Counter()
    soft_ctx = collections.Counter()
    step = collections.Counter()
    start = {}
    for t, cpu, name, args, comm in ev:
        if cpu not in cur:
            cur[cpu], since[cpu] = ('idle' if comm == '<idle>' else comm), t0
        if name == 'sched_switch':
            m = re.search(r'==> next_comm=(.*?) next_pid=(\d+)', args)
            run[(cpu, cur[cpu])] += t - since[cpu]
            cur[cpu] = 'idle' if m.group(2) == '0' else m.group(1)
            since[cpu] = t
        elif name == 'softirq_entry' and ('NET_RX' in args or 'TASKLET' in args):
            start[cpu] = t
            ctx = 'ksoftirqd' if comm.startswith('ksoftirqd') else \
                  'idle' if comm == '<idle>' else comm
            soft_ctx[(ctx, 'NET_RX' if 'NET_RX' in args else 'TASKLET')] += 1
        elif name == 'softirq_exit' and cpu in start:
            s = start.pop(cpu)
            soft[cpu] += t - s
            step[(int((s - t0) / STEP), cpu)] += t - s
    for cpu in cur:
        run[(cpu, cur[cpu])] += t1 - since[cpu]
    print('== %s: %.3f s, %d events' % (path, span, len(ev)))
    for cpu in range(ncpu):
        top = sorted(((v, k[1]) for k, v in run.items() if k[0] == cpu),
                     reverse=True)[:5]
        print('  cpu%d: %s; in NET_RX/TASKLET softirq %.0f%%' % (
            cpu, ', '.join('%s %.0f%%' % (n, 100 * v / span) for v, n in top),
            100 * soft[cpu] / span))
    print('  NET_RX/TASKLET softirqs run in: ' + ', '.join(
        '%s %s %d' % (k[0], k[1], v) for k, v in soft_ctx.most_common(6)))
    line = []
    for b in range(int(span / STEP) + 1):
        x = [step[(b, c)] / STEP for c in range(ncpu)]
        hi = [c for c in range(ncpu) if x[c] > 0.5]
        if len(hi) == 1 and all(x[c] < 0.2 for c in range(ncpu) if c != hi[0]):
            line.append(str(hi[0]))
        elif sum(v > 0.2 for v in x) > 1:
            line.append('B')
        else:
            line.append('.')
    s = ''.join(line)
    for i in range(0, len(s), 100):
        print('  ' + s[i:i + 100])


for p in sys.argv[1:]:
    analyse(p)

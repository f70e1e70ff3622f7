#!/usr/bin/env python3
"""Test aid: put a job's collectives on comm streams (dist_attr execution_stream), reordering nothing.

  assign_streams.py IN OUT --mode ring       every collective on its ring's stream "comm_ring<ID>"
  assign_streams.py IN OUT --mode backward   only backward collectives (op_role bit 1) on them
  assign_streams.py IN OUT --mode random --seed S
      each ring on its own stream or left on "default" (at random, the same choice on every rank,
      so a ring's collectives stay on one stream per rank), plus random explicit dependencies:
      an op records an event that a later op on another stream waits for (events_to_wait),
      numbered per rank. Numerics must not change: replay compares it with the original bitwise.
Prints "rings R streams S events E" (over all ranks) on stdout.
"""
import argparse, json, random

COLLECTIVES = {'c_allreduce_sum', 'all_reduce', 'c_reducescatter', 'reduce_scatter', 'c_allgather',
               'all_gather', 'c_broadcast', 'broadcast'}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('inp'); ap.add_argument('out')
    ap.add_argument('--mode', choices=['ring', 'backward', 'random'], default='ring')
    ap.add_argument('--seed', type=int, default=0)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    job = json.load(open(a.inp))
    rings = sorted({op['attrs']['ring_id'] for p in job['programs'] for b in p['blocks'] for op in b['ops']
                    if op['type'] in COLLECTIVES and 'ring_id' in op.get('attrs', {})})
    on_stream = {r: (a.mode != 'random' or rng.random() < 0.75) for r in rings}
    streams, events = set(), 0
    for p in job['programs']:
        ops = p['blocks'][0]['ops']
        where = []
        for op in ops:
            s = 'default'
            attrs = op.get('attrs', {})
            if op['type'] in COLLECTIVES and on_stream.get(attrs.get('ring_id')):
                if a.mode != 'backward' or int(attrs.get('op_role', 0)) & 1:
                    s = 'comm_ring%d' % attrs['ring_id']
            if s != 'default':
                op.setdefault('dist_attr', {})['execution_stream'] = s
                streams.add((p['rank'], s))
            where.append(s)
        if a.mode == 'random' and len(ops) > 2:
            for k in range(rng.randint(1, 4)):
                i = rng.randrange(len(ops) - 1)
                later = [j for j in range(i + 1, len(ops)) if where[j] != where[i]]
                if not later or ops[i].get('dist_attr', {}).get('event_to_record'):
                    continue
                j = rng.choice(later)
                name = 'ev%d' % k
                ops[i].setdefault('dist_attr', {})['event_to_record'] = name
                ops[j].setdefault('dist_attr', {}).setdefault('events_to_wait', []).append(name)
                events += 1
    json.dump(job, open(a.out, 'w'), indent=1)
    print('rings %d streams %d events %d' % (len(rings), len(streams), events))


if __name__ == '__main__':
    main()

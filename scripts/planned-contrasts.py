#!/usr/bin/env python3
"""Prints a study's planned contrasts as a Markdown table, read from the
results.json that corl report --json wrote: each contrast "NAME|A|B" names
two rows of the table by the end of their method label (else a unique
substring), and is printed as A - B with the report's crossed interval, raw
p, the Holm-corrected p over the report's whole table (the preregistered
correction), a Holm correction over the planned contrasts alone (secondary),
and the minimum detectable difference.

    scripts/planned-contrasts.py results/composition/results.json \
        "init seed - identical copy|nat-llama-init2|nat-llama-copy" ...
"""
import json,sys
t=json.load(open(sys.argv[1]))
comps={}
for c in t['comparisons']:
    comps[(c['a'],c['b'])]=(c['diff'],1)
    comps[(c['b'],c['a'])]=(c['diff'],-1)
def short(l):
    return l.split(' — ')[-1] if ' — ' in l else l
rows=[r['method'] for r in t['rows']]
def find(sub):
    m=[r for r in rows if r.endswith(sub)] or [r for r in rows if sub in r]
    assert len(m)==1,(sub,m)
    return m[0]
plan=[l.split('|') for l in sys.argv[2:]]
ps=[]
out=[]
for name,a,b in plan:
    A,B=find(a),find(b)
    d,sgn=comps[(A,B)]
    mean=sgn*d['diff']['mean']; lo,hi=d['diff']['lo'],d['diff']['hi']
    if sgn<0: lo,hi=-hi,-lo
    out.append((name,mean,lo,hi,d['p'],d['p_holm'],d['min_detectable']))
    ps.append(d['p'])
# Holm over the planned family alone (secondary)
m=len(ps); order=sorted(range(m),key=lambda i:ps[i]); adj=[0]*m; run=0
for k,i in enumerate(order):
    run=max(run,min(1,(m-k)*ps[i])); adj[i]=run
print("| contrast | A - B (seeds and problems crossed) | p | Holm (table) | Holm (planned only) | MDD |")
print("|---|---|---|---|---|---|")
for (name,mean,lo,hi,p,ph,mdd),pa in zip(out,adj):
    f=lambda x: "< 0.001" if x<0.001 else ("%.3g"%x)
    print(f"| {name} | {mean:+.3f} [{lo:+.3f}, {hi:+.3f}] | {f(p)} | {f(ph)} | {f(pa)} | {mdd:.3f} |")

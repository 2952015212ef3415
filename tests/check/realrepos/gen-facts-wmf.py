#!/usr/bin/env python3
"""Facts for wikimedia/operations-puppet: one node per hieradata/hosts/<host>.yaml, <host>.<site>.wmnet,
site from the host number's first digit (as WMF numbers hosts), an address in that site's private
range (realm.pp computes $site from it), Debian 12, and $trusted.certname = the fqdn."""
import copy, json, os, re, sys
base = json.load(open(sys.argv[1]))
tree, out = sys.argv[2], sys.argv[3]
os.makedirs(out, exist_ok=True)
sites = {'1': ('eqiad', '10.64.0.'), '2': ('codfw', '10.192.0.'), '3': ('esams', '10.80.0.'), '4': ('ulsfo', '10.128.0.'),
         '5': ('eqsin', '10.132.0.'), '6': ('drmrs', '10.136.0.'), '7': ('magru', '10.140.0.')}
n = 0
for f in sorted(os.listdir(tree + '/hieradata/hosts')):
    if not f.endswith('.yaml'):
        continue
    host = f[:-5]
    m = re.search(r'(\d)\d{3}$', host)
    site, net = sites.get(m.group(1) if m else '1', sites['1'])
    fq = '%s.%s.wmnet' % (host, site)
    fa = copy.deepcopy(base)
    fa['networking'].update({'fqdn': fq, 'hostname': host, 'domain': site + '.wmnet', 'ip': net + str(10 + n % 200)})
    fa.update({'fqdn': fq, 'hostname': host, 'domain': site + '.wmnet', 'clientcert': fq, 'ipaddress': net + str(10 + n % 200)})
    fa['os'].update({'family': 'Debian', 'name': 'Debian', 'release': {'major': '12', 'full': '12.5'}})
    fa['trusted'] = {'authenticated': 'remote', 'certname': fq, 'hostname': host, 'domain': site + '.wmnet', 'extensions': {}, 'external': {}}
    json.dump(fa, open(os.path.join(out, fq + '.json'), 'w'))
    n += 1
print(n, 'nodes')

#!/usr/bin/env python3
"""Facts for the extra repositories (invented as stated): usage gen-extra-facts.py BASE.json OUT"""
import copy, glob, json, os, sys
base = json.load(open(sys.argv[1])); OUT = sys.argv[2]; T = OUT + '/trees'
def node(certname, family, osname, major, ext=None, **extra):
    host, _, dom = certname.partition('.')
    f = copy.deepcopy(base)
    f['networking'].update({'fqdn': certname, 'hostname': host, 'domain': dom})
    f['os'].update({'family': family, 'name': osname, 'release': {'major': str(major), 'full': str(major)}})
    f.update({'clientcert': certname, 'fqdn': certname, 'hostname': host, 'domain': dom, 'osfamily': family, 'operatingsystem': osname})
    f.update(extra)
    f['trusted'] = {'authenticated': 'remote', 'certname': certname, 'hostname': host, 'domain': dom, 'extensions': ext or {}, 'external': {}}
    return certname, f
def write(tree, nodes):
    d = os.path.join(OUT, 'facts', tree); os.makedirs(d, exist_ok=True)
    for n in glob.glob(d + '/*'): os.remove(n)
    for name, f in nodes: json.dump(f, open(os.path.join(d, name + '.json'), 'w'))
    print(tree, len(nodes))
b = lambda p: os.path.splitext(os.path.basename(p))[0]
# ronin: a node per role file (the custom fact puppet_role), OS from the role's name
E = T + '/ronin/code/environments/production/data'
nodes = []
for p in sorted(glob.glob(E + '/roles/*.yaml')):
    r = b(p)
    if 'osx' in r or 'mac' in r: o = ('Darwin', 'Darwin', 21)
    elif 'win' in r: o = ('windows', 'windows', 10)
    else: o = ('Debian', 'Ubuntu', '22.04')
    nodes.append(node(r.replace('_', '-') + '.test.releng.mozilla.com', *o, puppet_role=r))
write('ronin', nodes)
# kscherer: a node per hiera/nodes file, pp_datacenter from the name's prefix
E = T + '/kscherer/code/environments/production/hiera'
write('kscherer', [node(b(p), 'RedHat', 'CentOS', 7, {'pp_datacenter': b(p).split('-')[0]}) for p in sorted(glob.glob(E + '/nodes/*.yaml'))])
# enucatl: a node per data/nodes file (NAME.home.arpa), Debian 12
E = T + '/enucatl/code/environments/production/data'
write('enucatl', [node(b(p) + '.home.arpa', 'Debian', 'Debian', 12) for p in sorted(glob.glob(E + '/nodes/*.yaml'))])
# joeypiccola: a node per role file (pp_role), team isg, Windows 2016
E = T + '/joeypiccola/code/environments/production/data'
nodes = [node(b(p) + '.ad.piccola.us', 'windows', 'windows', '2016', {'pp_role': b(p)}, team='isg', win_domain='ad.piccola.us')
         for p in sorted(glob.glob(E + '/role/*.yaml'))]
nodes.append(node('jenkins.ad.piccola.us', 'windows', 'windows', '2016', {}, role='base'))
write('joeypiccola', nodes)
# ocf: a node per hieradata/nodes file (hostname NAME, as its level reads %{::hostname}), Debian 12
# bookworm or 11 bullseye (os/<codename>), type desktop or staffvm (a custom fact), one physical
# machine in four (is_virtual/false)
E = T + '/ocf/code/environments/production/hieradata'
nodes = []
for i, p in enumerate(sorted(glob.glob(E + '/nodes/*.yaml'))):
    major, codename = ('12', 'bookworm') if i % 2 == 0 else ('11', 'bullseye')
    name, f = node(b(p) + '.ocf.berkeley.edu', 'Debian', 'Debian', major, type=('desktop', 'staffvm')[i % 3 == 0],
                   is_virtual=i % 4 != 0, lsbdistcodename=codename)
    f['os']['distro'] = {'codename': codename}
    nodes.append((name, f))
write('ocf', nodes)

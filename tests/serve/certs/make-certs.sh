#!/bin/sh
# Makes the test certificates of tests/serve (kept in the repository, valid for 100 years): a CA
# as Puppet's (CN "Puppet CA: test"), a server certificate for localhost, node certificates for
# node1.example.com and node2.example.com, and an admin's, and one whose name is node1's with a
# NUL and more after it (make-nul-cert.py: python3-cryptography). Run it again to renew them.
set -e
cd "$(dirname "$0")"
days=36500
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days $days -subj "/CN=Puppet CA: test" \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
cert() { # name, CN, extra subjectAltName
  openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "/CN=$2" 2>/dev/null
  printf 'basicConstraints=CA:FALSE\nsubjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$3" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -out "$1.pem" -days $days -extfile "$1.ext" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}
cert server localhost "DNS:localhost,IP:127.0.0.1"
cert node1 node1.example.com "DNS:node1.example.com"
cert node2 node2.example.com "DNS:node2.example.com"
cert admin admin.example.com "DNS:admin.example.com"
# a node certificate whose name holds a NUL after node1's name: must not read node1's answers
python3 make-nul-cert.py
# a certificate from another CA: must be refused
openssl req -x509 -newkey rsa:2048 -nodes -keyout rogue.key -out rogue.pem -days $days -subj "/CN=node1.example.com" 2>/dev/null
rm -f ca.srl

#!/bin/sh
# lookup.sh - eyaml values through `hiera lookup` (Hiera 5, lookup_key: eyaml_lookup_key) and the
# Hiera 3 `hiera` command (:backends: [eyaml]), with keys made AT TEST TIME by `hiera eyaml
# createkeys` and values encrypted by `hiera eyaml encrypt` and, when hiera-eyaml's `eyaml` is
# installed, by it too (the whole tree is built once per encrypting tool). Every placement: a
# whole value, a block inside a string, several blocks in one string, nested hashes and arrays
# (and dotted keys into them), hash keys (interpolated, never decrypted), a folded block scalar,
# a literal block scalar, non-ASCII plaintext, a trailing newline (chomped), interpolation after
# decryption, merges across an eyaml and a yaml level, plain values and nil in the eyaml file;
# and the errors (missing key file, a block for another key, base64 that is not PKCS7,
# ENC[GPG,...]) with their messages as Puppet 7.23 / hiera-eyaml 3.3 give them, never holding a
# plaintext. Needs neither Puppet nor hiera-eyaml. Prints "N passed, N failed".
#
# usage: tests/eyaml/lookup.sh [path/to/hiera]     (default: $HIERA, else build/hiera)
set -u

here=$(cd "$(dirname "$0")/../.." && pwd)
HIERA=${1:-${HIERA:-$here/build/hiera}}
case $HIERA in /*) ;; *) HIERA=$(pwd)/$HIERA ;; esac
if [ ! -x "$HIERA" ]; then
    echo "lookup.sh: $HIERA not found (build it, or pass the hiera binary)" >&2
    exit 1
fi

work=$(mktemp -d /tmp/hiera-eyaml-lookup-XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
# no configuration of the user's may change defaults; parsed files go to a scratch disk cache
# (used again when a tree is built anew with the other tool: the same paths, other contents)
export HOME="$work" EYAML_CONFIG= HIERA_CACHE_DIR="$work/diskcache"

pass=0
fail=0
ok() { pass=$((pass + 1)); }
ko() { fail=$((fail + 1)); echo "FAIL [$tool]: $*"; }

"$HIERA" eyaml createkeys --pkcs7-private-key=keys/private_key.pkcs7.pem \
    --pkcs7-public-key=keys/public_key.pkcs7.pem >/dev/null 2>&1 || { echo "hiera eyaml createkeys failed"; exit 1; }
"$HIERA" eyaml createkeys --pkcs7-private-key=other/private_key.pkcs7.pem \
    --pkcs7-public-key=other/public_key.pkcs7.pem >/dev/null 2>&1 || { echo "hiera eyaml createkeys failed"; exit 1; }

tools=ours
command -v "${EYAML:-eyaml}" >/dev/null 2>&1 && tools="ours real"

# enc TEXT [KEYDIR]: an ENC[PKCS7,...] string; blk TEXT: the block layout, indented by 4
encrypt() {
    if [ "$tool" = ours ]; then "$HIERA" eyaml encrypt "$@"; else "${EYAML:-eyaml}" encrypt "$@"; fi
}
enc() { encrypt --pkcs7-public-key="${2:-keys}/public_key.pkcs7.pem" -o string -s "$1" 2>/dev/null; }
enc_file() { encrypt --pkcs7-public-key=keys/public_key.pkcs7.pem -o string -f "$1" 2>/dev/null; }
blk() { encrypt --pkcs7-public-key=keys/public_key.pkcs7.pem -o block -s "$1" 2>/dev/null | sed 's/^ */    /'; }

printf 'line one\nline two\n' > multiline.txt

# ---------------------------------------------------------------- the trees
build() {
    t=$work/$tool
    mkdir -p "$t/environments/production/data" "$t/eyamldata" "$t/yamldata"
    printf 'version: 5\nhierarchy: []\n' > "$t/hiera.yaml"
    printf 'hostname: vault1\ndomain: example.com\nfqdn: vault1.example.com\nclientcert: vault1.example.com\nkeydir: keys\n' > "$t/facts.yaml"
    cat > "$t/environments/production/hiera.yaml" <<'EOF'
version: 5
defaults:
  datadir: data
  data_hash: yaml_data
hierarchy:
  - name: "Secrets"
    lookup_key: eyaml_lookup_key
    path: secrets.eyaml
    options:
      pkcs7_private_key: "%{facts.keydir}/private_key.pkcs7.pem"
      pkcs7_public_key: "%{facts.keydir}/public_key.pkcs7.pem"
  - name: "Key file missing"
    lookup_key: eyaml_lookup_key
    path: nokey.eyaml
    options:
      pkcs7_private_key: keys/missing.pem
      pkcs7_public_key: keys/public_key.pkcs7.pem
  - name: "Common"
    path: common.yaml
EOF
    ENCKEY=$(enc "an encrypted key")
    OTHER=$(enc "for another key" other)
    GOOD=$(enc "good-secret")
    {
        echo "---"
        echo "whole: $(enc 's3cr3t whole')"
        echo "embedded: \"user=admin password=$(enc pw-embedded) host=db1\""
        echo "several: \"$(enc alpha):$(enc beta)/$(enc gamma)\""
        echo "nested:"
        echo "  level1:"
        echo "    password: $(enc nested-pw)"
        echo "    list:"
        echo "      - $(enc 'first item')"
        echo "      - plain item"
        echo "      - inner: $(enc 'deep inner')"
        echo "keyed:"
        echo "  \"%{HOSTVAR}_token\": $(enc token-for-host)"
        echo "  $ENCKEY: keys are never decrypted"
        echo "folded: >"
        blk "from a folded block"
        echo "literal_text: |"
        echo "  header line"
        echo "  $(enc 'middle secret')"
        echo "  footer line"
        echo "unicode: $(enc 'héllo wörld ✓ 日本語')"
        echo "multiline_plain: $(enc_file multiline.txt)"
        echo "interpolated: INTERPOLATED"
        echo "plain_in_eyaml: plain text in the eyaml file"
        echo "number_in_eyaml: 42"
        echo "nil_in_eyaml: ~"
        echo "merged_hash:"
        echo "  from_eyaml: $(enc eyaml-only)"
        echo "  shared: $(enc 'eyaml wins')"
        echo "  deep:"
        echo "    secret: $(enc deep-secret)"
        echo "merged_list:"
        echo "  - $(enc eyaml-item)"
        echo "  - shared-item"
        echo "sensitive_pw: $(enc never-shown)"
        echo "other_key: $OTHER"
        echo "good_then_bad: \"ok=$GOOD bad=$OTHER\""
        echo "bad_payload: ENC[PKCS7,QUJD]"
        echo "not_base64: \"ENC[PKCS7,not*base64]\""
        echo "gpg: ENC[GPG,aGVsbG8=]"
        echo "pkcs7_then_gpg: \"$GOOD ENC[GPG,aGVsbG8=]\""
    } > secrets.tmpl
    # Hiera 5 and Hiera 3 spell variables and lookups differently: a plaintext each
    i5=$(enc "db://%{facts.fqdn}/%{lookup('plain_common')}")
    i3=$(enc "db://%{fqdn}/%{hiera('plain_common')}")
    sed -e 's/%{HOSTVAR}/%{facts.hostname}/' -e "s#INTERPOLATED#$i5#" secrets.tmpl \
        > "$t/environments/production/data/secrets.eyaml"
    sed -e 's/%{HOSTVAR}/%{hostname}/' -e "s#INTERPOLATED#$i3#" secrets.tmpl > "$t/eyamldata/common.eyaml"
    cat > "$t/environments/production/data/nokey.eyaml" <<EOF
nokey_plain: plain values need no key
nokey_secret: $(enc unreachable)
EOF
    common='plain_common: from yaml
whole: shadowed by the eyaml level
merged_hash:
  from_yaml: plain
  shared: yaml loses
  deep:
    plain: deep-plain
merged_list:
  - shared-item
  - yaml-item
'
    printf '%s' "$common" > "$t/yamldata/common.yaml"
    printf '%s' "$common" > "$t/environments/production/data/common.yaml"
    cat >> "$t/environments/production/data/common.yaml" <<'EOF'
uses_secret: "conn=%{lookup('whole')}"
lookup_options:
  sensitive_pw:
    convert_to: Sensitive
EOF
    echo "nil_in_eyaml: the yaml backend answers" >> "$t/yamldata/common.yaml"
    cat > "$t/hiera3.yaml" <<'EOF'
---
:backends: [eyaml, yaml]
:hierarchy: [common]
:merge_behavior: deeper
:eyaml:
  :datadir: "%{tree}/eyamldata"
  :pkcs7_private_key: "%{keydir}/private_key.pkcs7.pem"
  :pkcs7_public_key: "%{keydir}/public_key.pkcs7.pem"
:yaml:
  :datadir: "%{tree}/yamldata"
EOF
    sed 's#"%{keydir}/private_key.pkcs7.pem"#keys/missing.pem#' "$t/hiera3.yaml" > "$t/hiera3-nokey.yaml"
}

# ---------------------------------------------------------------- checks
# h5 [FLAGS...] KEY EXPECTED: hiera lookup --render-as json prints EXPECTED
h5() {
    eval "want=\${$#}"
    n=$(($# - 1)); args=""
    i=0; for a in "$@"; do i=$((i + 1)); [ $i -le $n ] && args="$args '$a'"; done
    eval "set -- $args"
    got=$("$HIERA" lookup --codedir "$t" --environmentpath "$t/environments" --hiera_config "$t/hiera.yaml" \
        --node vault1.example.com --facts "$t/facts.yaml" --render-as json "$@" 2>err.txt)
    if [ "$got" = "$want" ]; then ok; else ko "hiera lookup $*: expected $want, got $got $(head -c 300 err.txt)"; fi
}
# h5_err KEY FRAGMENT SECRET: exit 1, stderr holds FRAGMENT and not SECRET, stdout empty
h5_err() {
    "$HIERA" lookup --codedir "$t" --environmentpath "$t/environments" --hiera_config "$t/hiera.yaml" \
        --node vault1.example.com --facts "$t/facts.yaml" --render-as json "$1" > out.txt 2> err.txt
    rc=$?
    if [ $rc -eq 1 ] && [ ! -s out.txt ] && grep -qF -- "$2" err.txt && ! grep -qF -- "$3" err.txt; then ok
    else ko "hiera lookup $1: expected exit 1 with '$2' (and no '$3'), got exit $rc: $(head -c 400 out.txt err.txt)"; fi
}
# h5_lookup_err KEY FRAGMENT SECRET: a lookup error: exit 1 without a word (stdout empty, no
# "Error:" on stderr), as puppet lookup; with --explain the explanation holds FRAGMENT, not SECRET
h5_lookup_err() {
    "$HIERA" lookup --codedir "$t" --environmentpath "$t/environments" --hiera_config "$t/hiera.yaml" \
        --node vault1.example.com --facts "$t/facts.yaml" --render-as json "$1" > out.txt 2> err.txt
    rc=$?
    if [ $rc -eq 1 ] && [ ! -s out.txt ] && ! grep -q '^Error:' err.txt && ! grep -qF -- "$3" err.txt; then ok
    else ko "hiera lookup $1: expected exit 1 without a word, got exit $rc: $(head -c 400 out.txt err.txt)"; fi
    "$HIERA" lookup --codedir "$t" --environmentpath "$t/environments" --hiera_config "$t/hiera.yaml" \
        --node vault1.example.com --facts "$t/facts.yaml" --explain "$1" > out.txt 2> err.txt
    rc=$?
    if [ $rc -eq 0 ] && grep -qF -- "$2" out.txt && ! grep -qF -- "$3" out.txt err.txt; then ok
    else ko "hiera lookup --explain $1: expected exit 0 with '$2' (and no '$3'), got exit $rc: $(head -c 600 out.txt err.txt)"; fi
}
# h3 [FLAGS...] KEY EXPECTED: the Hiera 3 command (-f json) prints EXPECTED
h3() {
    eval "want=\${$#}"
    n=$(($# - 1)); args=""
    i=0; for a in "$@"; do i=$((i + 1)); [ $i -le $n ] && args="$args '$a'"; done
    eval "set -- $args"
    got=$("$HIERA" -c "$t/hiera3.yaml" -f json "$@" tree="$t" keydir=keys hostname=vault1 fqdn=vault1.example.com 2>err.txt)
    if [ "$got" = "$want" ]; then ok; else ko "hiera $*: expected $want, got $got $(head -c 300 err.txt)"; fi
}
# h3_err CONFIG KEY MESSAGE SECRET: exit 1, stderr is "hiera: MESSAGE" and holds no SECRET
h3_err() {
    "$HIERA" -c "$t/$1" -f json "$2" tree="$t" keydir=keys hostname=vault1 fqdn=vault1.example.com > out.txt 2> err.txt
    rc=$?
    printf 'hiera: %s\n' "$3" > want.txt
    if [ $rc -eq 1 ] && [ ! -s out.txt ] && cmp -s want.txt err.txt && ! grep -qF -- "$4" err.txt; then ok
    else ko "hiera -c $1 $2: expected exit 1 with 'hiera: $3', got exit $rc: $(head -c 400 out.txt err.txt)"; fi
}

for tool in $tools; do
    build
    data5="$t/environments/production/data/secrets.eyaml"
    # ---- Hiera 5
    h5 whole '"s3cr3t whole"'
    h5 embedded '"user=admin password=pw-embedded host=db1"'
    h5 several '"alpha:beta/gamma"'
    h5 nested '{"level1":{"password":"nested-pw","list":["first item","plain item",{"inner":"deep inner"}]}}'
    h5 nested.level1.password '"nested-pw"'
    h5 nested.level1.list.2.inner '"deep inner"'
    h5 keyed "{\"vault1_token\":\"token-for-host\",\"$ENCKEY\":\"keys are never decrypted\"}"
    h5 folded '"from a folded block"'
    h5 literal_text '"header line\nmiddle secret\nfooter line"'
    h5 unicode '"héllo wörld ✓ 日本語"'
    h5 multiline_plain '"line one\nline two"'
    h5 interpolated '"db://vault1.example.com/from yaml"'
    h5 uses_secret '"conn=s3cr3t whole"'
    h5 plain_in_eyaml '"plain text in the eyaml file"'
    h5 number_in_eyaml 42
    h5 nil_in_eyaml null
    h5 merged_hash '{"from_eyaml":"eyaml-only","shared":"eyaml wins","deep":{"secret":"deep-secret"}}'
    h5 --merge hash merged_hash '{"from_yaml":"plain","shared":"eyaml wins","deep":{"secret":"deep-secret"},"from_eyaml":"eyaml-only"}'
    h5 --merge deep merged_hash '{"from_yaml":"plain","shared":"eyaml wins","deep":{"plain":"deep-plain","secret":"deep-secret"},"from_eyaml":"eyaml-only"}'
    h5 --merge unique merged_list '["eyaml-item","shared-item","yaml-item"]'
    h5 --merge unique whole '["s3cr3t whole","shadowed by the eyaml level"]'
    h5 not_base64 '"ENC[PKCS7,not*base64]"'
    h5 nokey_plain '"plain values need no key"'
    # convert_to Sensitive: redacted when printed, and in the explanation too
    h5 --render-as s sensitive_pw 'Sensitive [value redacted]'
    "$HIERA" lookup --codedir "$t" --environmentpath "$t/environments" --hiera_config "$t/hiera.yaml" \
        --node vault1.example.com --facts "$t/facts.yaml" --explain sensitive_pw > out.txt 2>&1
    if grep -q 'Found key: "sensitive_pw"' out.txt && ! grep -q never-shown out.txt; then ok
    else ko "--explain sensitive_pw shows the secret or nothing: $(head -c 400 out.txt)"; fi
    "$HIERA" lookup --codedir "$t" --environmentpath "$t/environments" --hiera_config "$t/hiera.yaml" \
        --node vault1.example.com --facts "$t/facts.yaml" --explain nested.level1.password > out.txt 2>&1
    if grep -qF "Path \"$data5\"" out.txt && grep -q 'Found key: "nested" value: {' out.txt &&
        grep -q 'Sub key: "level1.password"' out.txt && grep -q 'Found key: "password" value: "nested-pw"' out.txt; then ok
    else ko "--explain nested.level1.password: $(head -c 600 out.txt)"; fi
    # errors: a LookupError ends the run with exit 1 and not a word, as puppet lookup (--explain
    # tells it); a LoadError stops the run as Puppet's "Error: Could not run:"
    h5_lookup_err nokey_secret "Error was No such file or directory @ rb_sysopen - keys/missing.pem" unreachable
    h5_lookup_err other_key "when looking up other_key in $data5. Error was bad decrypt" "for another key"
    h5_lookup_err good_then_bad "hiera-eyaml backend error decrypting ok=ENC[PKCS7," good-secret
    h5_lookup_err bad_payload "hiera-eyaml backend error decrypting ENC[PKCS7,QUJD] when looking up bad_payload in $data5. Error was Could not parse the PKCS7: no start line" "nothing"
    h5_err gpg "Error: Could not run: cannot load such file -- hiera/backend/eyaml/encryptors/gpg" "hello"
    # ---- Hiera 3 (:backends: [eyaml, yaml])
    h3 whole '"s3cr3t whole"'
    h3 embedded '"user=admin password=pw-embedded host=db1"'
    h3 several '"alpha:beta/gamma"'
    h3 nested '{"level1":{"password":"nested-pw","list":["first item","plain item",{"inner":"deep inner"}]}}'
    h3 nested.level1.list.2.inner '"deep inner"'
    h3 keyed "{\"vault1_token\":\"token-for-host\",\"$ENCKEY\":\"keys are never decrypted\"}"
    h3 folded '"from a folded block"'
    h3 literal_text '"header line\nmiddle secret\nfooter line"'
    h3 unicode '"héllo wörld ✓ 日本語"'
    h3 multiline_plain '"line one\nline two"'
    h3 interpolated '"db://vault1.example.com/from yaml"'
    h3 plain_in_eyaml '"plain text in the eyaml file"'
    h3 number_in_eyaml 42
    h3 nil_in_eyaml '"the yaml backend answers"'
    h3 -h merged_hash '{"from_yaml":"plain","shared":"eyaml wins","deep":{"plain":"deep-plain","secret":"deep-secret"},"from_eyaml":"eyaml-only"}'
    h3 -a merged_list '["eyaml-item","shared-item","yaml-item"]'
    h3 -a whole '["s3cr3t whole","shadowed by the eyaml level"]'
    h3 not_base64 '"ENC[PKCS7,not*base64]"'
    h3_err hiera3.yaml other_key "Hiera-eyaml decryption failed, check the encrypted data matches the key you are using.
Raw message from system: bad decrypt" "for another key"
    h3_err hiera3.yaml good_then_bad "Hiera-eyaml decryption failed, check the encrypted data matches the key you are using.
Raw message from system: bad decrypt" good-secret
    h3_err hiera3.yaml bad_payload "Could not parse the PKCS7: no start line" nothing
    h3_err hiera3-nokey.yaml whole "No such file or directory @ rb_sysopen - keys/missing.pem" "s3cr3t"
    h3_err hiera3.yaml gpg "uninitialized constant Hiera::Backend::Eyaml_backend::OpenSSL

          rescue OpenSSL::PKCS7::PKCS7Error => e
                 ^^^^^^^" hello
    h3_err hiera3.yaml pkcs7_then_gpg "cannot load such file -- hiera/backend/eyaml/encryptors/gpg" good-secret
done

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]

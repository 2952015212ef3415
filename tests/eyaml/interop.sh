#!/bin/sh
# interop.sh - `hiera eyaml` against the real hiera-eyaml `eyaml` command, both directions:
# blocks the real tool encrypts are decrypted by ours and ours by it, with keys made at run time
# by each tool; decrypt -f/-e output and the encrypt layouts (-o string/block/examples, -l,
# encrypt -e) are compared byte for byte (ciphertext masked where it is random), and so are the
# error messages. Prints "N passed, N failed"; exits 0 with a note when eyaml is not installed.
#
# usage: tests/eyaml/interop.sh [path/to/hiera]     (default: $HIERA, else build/hiera)
set -u

EYAML=${EYAML:-eyaml}
if ! command -v "$EYAML" >/dev/null 2>&1; then
    echo "interop.sh: skipped: the eyaml command (hiera-eyaml) is not installed"
    exit 0
fi
here=$(cd "$(dirname "$0")/../.." && pwd)
HIERA=${1:-${HIERA:-$here/build/hiera}}
case $HIERA in /*) ;; *) HIERA=$(pwd)/$HIERA ;; esac
if [ ! -x "$HIERA" ]; then
    echo "interop.sh: $HIERA not found (build it, or pass the hiera binary)" >&2
    exit 1
fi

work=$(mktemp -d /tmp/hiera-eyaml-interop-XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
# no config file of the user's may change defaults; a scratch disk cache
export HOME="$work" EYAML_CONFIG= HIERA_CACHE_DIR="$work/diskcache"

pass=0
fail=0
ok() { pass=$((pass + 1)); }
ko() { fail=$((fail + 1)); echo "FAIL: $*"; }
# same FILE1 FILE2 DESCRIPTION
same() { if cmp -s "$1" "$2"; then ok; else ko "$3"; diff "$1" "$2" | head -10; fi; }
ours() { "$HIERA" eyaml "$@"; }
real() { "$EYAML" "$@"; }
# the real tool colours its messages
nocolour() { sed 's/\x1b\[[0-9;]*m//g'; }
# random ciphertext masked, lengths and layout kept: every base64 character becomes an x
mask() { sed 's#[A-Za-z0-9+/=]#x#g'; }

real createkeys --pkcs7-private-key=rk/private.pem --pkcs7-public-key=rk/public.pem >/dev/null 2>&1 || { echo "eyaml createkeys failed"; exit 1; }
ours createkeys --pkcs7-private-key=ok/private.pem --pkcs7-public-key=ok/public.pem >/dev/null 2>&1 || ko "hiera eyaml createkeys"
[ "$(stat -c %a ok/private.pem 2>/dev/null)" = 600 ] && ok || ko "private key mode 0600"
head -1 ok/private.pem | grep -q -- '-----BEGIN RSA PRIVATE KEY-----' && ok || ko "private key PEM header"

# plaintexts: ASCII, UTF-8, empty, multi-line with CR, a 100 KB file
printf 'db-password-123' > p1
printf 'h\303\251llo \303\274n\303\257code \342\234\223' > p2
printf '' > p3
printf 'line1\nline2\r\n\nline3\n' > p4
i=0; : > p5; while [ $i -lt 1600 ]; do printf 'row %05d of the hundred kilobyte secret, with words and 0123456789\n' $i >> p5; i=$((i + 1)); done

for keys in rk ok; do
    K="--pkcs7-private-key=$keys/private.pem --pkcs7-public-key=$keys/public.pem"
    for p in p1 p2 p3 p4 p5; do
        # real -> ours: -o string through decrypt -s (--stdin for the big one, an argument
        # cannot hold it); -o block through decrypt -f (a YAML file)
        real encrypt $K -f $p -o string > s.txt 2>/dev/null
        s=$(cat s.txt); printf '%s' "$s" > s.txt
        src="-s $(cat s.txt)"; [ $p = p5 ] && src=--stdin
        ours decrypt $K $src < s.txt > out.ours 2>&1
        real decrypt $K $src < s.txt > out.real 2>&1
        same out.real out.ours "real encrypt -> hiera decrypt $src ($keys, $p)"
        { echo "key: >"; real encrypt $K -f $p -o block 2>/dev/null; } > blk.yaml
        ours decrypt $K -f blk.yaml > out.ours 2>&1
        real decrypt $K -f blk.yaml > out.real 2>&1
        same out.real out.ours "real encrypt -o block -> hiera decrypt -f ($keys, $p)"
        # ours -> real
        ours encrypt $K -f $p -o string > s.txt 2>/dev/null
        s=$(cat s.txt); printf '%s' "$s" > s.txt
        src="-s $(cat s.txt)"; [ $p = p5 ] && src=--stdin
        real decrypt $K $src < s.txt > out.real 2>&1
        { cat $p; [ -s $p ] && [ "$(tail -c1 $p | od -An -c | tr -d ' ')" = '\n' ] || echo; } > want
        same want out.real "hiera encrypt -> real decrypt $src ($keys, $p)"
        { echo "key: >"; ours encrypt $K -f $p -o block 2>/dev/null; } > blk.yaml
        real decrypt $K -f blk.yaml > out.real 2>&1
        ours decrypt $K -f blk.yaml > out.ours 2>&1
        same out.real out.ours "hiera encrypt -o block -> real decrypt -f ($keys, $p)"
        # the layouts (ciphertext masked), once per plaintext length
        [ $keys = rk ] || continue
        for o in string block examples foo; do
            real encrypt $K -f $p -o $o 2>/dev/null | mask > out.real
            ours encrypt $K -f $p -o $o 2>/dev/null | mask > out.ours
            same out.real out.ours "encrypt -o $o layout ($keys, $p)"
            real encrypt $K -l my_label -f $p -o $o 2>/dev/null | mask > out.real
            ours encrypt $K -l my_label -f $p -o $o 2>/dev/null | mask > out.ours
            same out.real out.ours "encrypt -l -o $o layout ($keys, $p)"
        done
    done
done

# a mixed eyaml file written by the real tool, with plain text around and between blocks
K="--pkcs7-private-key=rk/private.pem --pkcs7-public-key=rk/public.pem"
b1=$(real encrypt $K -f p4 -o string); b3=$(real encrypt $K -s x -o string)
payload=${b3#ENC[PKCS7,}
{
    echo "---"
    echo "multi: $b1"
    echo "quoted: \"$b1\""
    real encrypt $K -l folded -f p4 -o block
    echo "inline: pre $b3 mid ENC[$payload post"
    echo "unicode: >"
    real encrypt $K -f p2 -o block
    echo "weird: ENC[GARBAGE only] and ENC[PKCS7,] and ENC[]"
    echo "twice: $b3$b3"
} > mixed.yaml
for mode in -f -e; do
    real decrypt $K $mode mixed.yaml > out.real 2>&1
    ours decrypt $K $mode mixed.yaml > out.ours 2>&1
    same out.real out.ours "decrypt $mode of a mixed file"
done
# encrypt -e (DEC::PKCS7[...]! tokens) each way, checked by decrypting with the other tool
real decrypt $K -e mixed.yaml > dec.yaml
ours encrypt $K -e dec.yaml > enc.ours; real encrypt $K -e dec.yaml > enc.real
mask < enc.ours > m.ours; mask < enc.real > m.real
same m.real m.ours "encrypt -e layout"
real decrypt $K -f enc.ours > out.real 2>&1; real decrypt $K -f mixed.yaml > want 2>&1
same want out.real "hiera encrypt -e -> real decrypt -f"
ours decrypt $K -f enc.real > out.ours 2>&1
same want out.ours "real encrypt -e -> hiera decrypt -f"

# errors: same message (colours aside), exit status 1
err_case() { # description, then the arguments
    d=$1; shift
    real "$@" > out.real 2>&1; rr=$?
    ours "$@" > out.ours 2>&1; ro=$?
    nocolour < out.real > e.real; nocolour < out.ours > e.ours
    same e.real e.ours "error message: $d"
    [ $rr -ne 0 ] && [ $ro -eq 1 ] && ok || ko "exit status: $d (real $rr, ours $ro)"
}
err_case "missing private key" decrypt --pkcs7-private-key=nope.pem --pkcs7-public-key=rk/public.pem -s "$b3"
err_case "missing public key" encrypt --pkcs7-public-key=nope.pem -s x
err_case "missing input file" encrypt $K -f no-such-file
err_case "wrong key pair" decrypt --pkcs7-private-key=ok/private.pem --pkcs7-public-key=rk/public.pem -s "$b3"
err_case "corrupt block" decrypt $K -s 'ENC[PKCS7,bm90IHJlYWxseSBlbmNyeXB0ZWQ=]'
err_case "certificate as private key" decrypt --pkcs7-private-key=rk/public.pem --pkcs7-public-key=rk/public.pem -s "$b3"

# the default key paths (./keys/...) of both tools
mkdir -p keys && cp rk/private.pem keys/private_key.pkcs7.pem && cp rk/public.pem keys/public_key.pkcs7.pem
s=$(ours encrypt -s defaults -o string)
[ "$(real decrypt -s "$s" 2>&1)" = defaults ] && ok || ko "default key paths"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]

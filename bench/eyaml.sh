#!/bin/sh
# bench/eyaml.sh - the cost of eyaml: 10,000 lookups of encrypted keys next to the same 10,000
# lookups of the same values stored in clear, with hiera and (when installed) Puppet 7, and how
# many PKCS7 decryptions each made. Takes well under a minute; see bench/README.md ("eyaml").
#
# usage: bench/eyaml.sh [path/to/hiera]      (default: $HIERA, else build/hiera)
# environment: NODES (100) x KEYS (100) lookups for hiera (PER_NODE_NODES (20) nodes when every
#              node gets its own cache); PUPPET_COMPILES (20) compiles of
#              KEYS lookups for Puppet (each compile is a fresh catalog compiler, as every agent
#              run gets); NO_PUPPET=1 skips Puppet; RUNS (5) repetitions of each hiera timing.
#
# The tree: one eyaml_lookup_key level whose file holds KEYS values encrypted by `hiera eyaml
# encrypt -e` (secret_N) and the same KEYS values in clear (plain_N), so the two kinds of lookup
# differ only by the decryption. Timings are CPU time (user + system) unless marked wall.
set -u

here=$(cd "$(dirname "$0")/.." && pwd)
HIERA=${1:-${HIERA:-$here/build/hiera}}
case $HIERA in /*) ;; *) HIERA=$(pwd)/$HIERA ;; esac
if [ ! -x "$HIERA" ]; then
    echo "eyaml.sh: $HIERA not found (run make, or pass the hiera binary)" >&2
    exit 1
fi
NODES=${NODES:-100}
KEYS=${KEYS:-100}
RUNS=${RUNS:-5}
PUPPET_COMPILES=${PUPPET_COMPILES:-20}
PER_NODE_NODES=${PER_NODE_NODES:-20}
LOOKUPS=$((NODES * KEYS))

work=$(mktemp -d "${TMPDIR:-/tmp}/hiera-eyaml-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
export HIERA_CACHE_DIR="$work/diskcache"

# ---------------------------------------------------------------- the tree
"$HIERA" eyaml createkeys --pkcs7-private-key=keys/private_key.pkcs7.pem \
    --pkcs7-public-key=keys/public_key.pkcs7.pem >/dev/null 2>&1 || { echo "eyaml.sh: createkeys failed" >&2; exit 1; }
mkdir -p env/production/data facts
cat > env/production/hiera.yaml <<'EOF'
version: 5
hierarchy:
  - name: secrets
    lookup_key: eyaml_lookup_key
    path: secrets.eyaml
    options:
      pkcs7_private_key: keys/private_key.pkcs7.pem
      pkcs7_public_key: keys/public_key.pkcs7.pem
EOF
printf 'version: 5\nhierarchy: []\n' > hiera.yaml
: > dec.eyaml
: > keys-secret.txt
: > keys-plain.txt
i=0
while [ $i -lt "$KEYS" ]; do
    printf 'secret_%d: DEC::PKCS7[the value of key number %d]!\nplain_%d: the value of key number %d\n' $i $i $i $i >> dec.eyaml
    echo "secret_$i" >> keys-secret.txt
    echo "plain_$i" >> keys-plain.txt
    i=$((i + 1))
done
"$HIERA" eyaml encrypt --pkcs7-public-key=keys/public_key.pkcs7.pem -e dec.eyaml > env/production/data/secrets.eyaml ||
    { echo "eyaml.sh: encrypt -e failed" >&2; exit 1; }
i=0
while [ $i -lt "$NODES" ]; do
    printf 'role: bench\nindex: %d\n' $i > facts/node$i.example.com.yaml
    i=$((i + 1))
done
printf 'hostname: node0\ndomain: example.com\nfqdn: node0.example.com\nclientcert: node0.example.com\nrole: bench\n' > one.yaml
COMMON="--codedir $work --environmentpath $work/env --hiera_config $work/hiera.yaml"

# ---------------------------------------------------------------- timing helpers
# cpu_of CMD...: runs CMD (output to out.txt, errors to err.txt) and prints "cpu wall" in
# seconds: the child's user + system time from wait4() (python3), else GNU time's (10 ms steps)
PYTIME='
import os, sys, time
out, err = open("out.txt", "wb"), open("err.txt", "wb")
t = time.monotonic()
pid = os.fork()
if pid == 0:
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0); os.dup2(out.fileno(), 1); os.dup2(err.fileno(), 2)
    try:
        os.execv(sys.argv[1], sys.argv[1:])
    finally:
        os._exit(127)
_, status, ru = os.wait4(pid, 0)
print("%.6f %.6f" % (ru.ru_utime + ru.ru_stime, time.monotonic() - t))
'
cpu_of() {
    if command -v python3 >/dev/null 2>&1; then
        python3 -c "$PYTIME" "$@"
    elif [ -x /usr/bin/time ]; then
        /usr/bin/time -f '%U %S %e' -o t.txt "$@" > out.txt 2> err.txt
        awk '{ printf "%.4f %.4f\n", $1 + $2, $3 }' t.txt
    else
        s=$(date +%s.%N); "$@" > out.txt 2> err.txt; e=$(date +%s.%N)
        echo "$s $e" | awk '{ printf "%.4f %.4f\n", $2 - $1, $2 - $1 }'
    fi
}
# median_of N CMD...: the run with the median CPU time of N runs
median_of() {
    n=$1; shift
    k=0; : > runs.txt
    while [ $k -lt "$n" ]; do cpu_of "$@" >> runs.txt; k=$((k + 1)); done
    sort -n runs.txt | awk -v n="$n" 'NR == int((n + 1) / 2)'
}
us() { awk -v s="$1" -v n="$2" 'BEGIN { printf "%.2f", s * 1e6 / n }'; }
ms() { awk -v s="$1" 'BEGIN { printf "%.2f", s * 1e3 }'; }

echo "eyaml benchmark: $NODES nodes x $KEYS keys = $LOOKUPS lookups per kind ($(nproc 2>/dev/null || echo '?') CPUs)"
echo

# ---------------------------------------------------------------- hiera batch
batch_check() { # the answers must all be there, and be the plaintext
    n=$(grep -c '"the value of key number' out.txt)
    if [ "$n" -ne "$LOOKUPS" ] || grep -q '"\.errors"' out.txt; then
        echo "eyaml.sh: hiera batch gave $n of $LOOKUPS answers:" >&2
        head -c 600 out.txt >&2; head -5 err.txt >&2
        exit 1
    fi
}
set -- batch --jobs 1 $COMMON --facts-dir "$work/facts"
plain=$(median_of "$RUNS" "$HIERA" "$@" --keys-file keys-plain.txt); batch_check
secret=$(median_of "$RUNS" "$HIERA" "$@" --keys-file keys-secret.txt); batch_check
p_cpu=${plain% *}; s_cpu=${secret% *}
echo "hiera batch --jobs 1 (one process, one cache; median of $RUNS runs; includes reading $NODES facts files and printing):"
printf '  %-34s %9.4fs CPU  %8s us/lookup  (wall %.4f s)\n' "plain keys ($LOOKUPS lookups)" "$p_cpu" "$(us "$p_cpu" $LOOKUPS)" "${plain#* }"
printf '  %-34s %9.4fs CPU  %8s us/lookup  (wall %.4f s)\n' "encrypted keys ($LOOKUPS lookups)" "$s_cpu" "$(us "$s_cpu" $LOOKUPS)" "${secret#* }"
awk -v a="$s_cpu" -v b="$p_cpu" -v k="$KEYS" -v n="$LOOKUPS" 'BEGIN { printf "  encrypted - plain: %.1f ms for %d decryptions (each block once) and %d cached answers\n", (a - b) * 1e3, k, n - k }'
echo

# ---------------------------------------------------------------- one-shot hiera lookup
set -- lookup $COMMON --node node0.example.com --facts "$work/one.yaml" --render-as json
"$HIERA" "$@" plain_0 >/dev/null 2>&1 # fills the disk cache
p1=$(median_of 11 "$HIERA" "$@" plain_0)
s1=$(median_of 11 "$HIERA" "$@" secret_0)
grep -q '"the value of key number 0"' out.txt || { echo "eyaml.sh: hiera lookup secret_0 gave $(cat out.txt err.txt)" >&2; exit 1; }
echo "hiera lookup, one process per lookup (median of 11; the encrypted one loads libcrypto and decrypts once):"
printf '  %-34s %8s ms CPU  (wall %s ms)\n' "plain_0" "$(ms "${p1% *}")" "$(ms "${p1#* }")"
printf '  %-34s %8s ms CPU  (wall %s ms)\n' "secret_0" "$(ms "${s1% *}")" "$(ms "${s1#* }")"
echo

# ---------------------------------------------------------------- decryptions, counted in process
# A small program on libhiera.a counts the PKCS7 decryptions (eyaml.c's counter) over the same
# lookups made through the C API: one cache shared by every node (what hiera batch does), and a
# fresh cache per node (what a Puppet compile does with its per-compile lookup cache).
LIB=$(dirname "$HIERA")/libhiera.a
if [ -f "$LIB" ] && command -v cc >/dev/null 2>&1; then
    cat > count.c <<'EOF'
#include "hiera.h"
#include "engine/engine.h"
#include "crypto/eyaml.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* count CODEDIR KIND NODES KEYS shared|per-node: prints "lookups found cpu_seconds decrypts" */
int main(int argc, char **argv)
{
    if (argc != 6)
        return 2;
    const char *dir = argv[1], *kind = argv[2];
    int nodes = atoi(argv[3]), keys = atoi(argv[4]);
    int shared = strcmp(argv[5], "shared") == 0;
    char env[4096], cfg[4096], name[64], key[64];
    snprintf(env, sizeof env, "%s/env", dir);
    snprintf(cfg, sizeof cfg, "%s/hiera.yaml", dir);
    hiera_cache *common = shared ? hiera_cache_new() : NULL;
    unsigned long decrypts = 0;
    long found = 0, lookups = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
    for (int n = 0; n < nodes; n++) {
        hiera_cache *c = common ? common : hiera_cache_new();
        hiera_value *facts = hiera_value_new_hash();
        hiera_value_hash_set(facts, "role", hiera_value_new_string("bench"));
        snprintf(name, sizeof name, "node%d.example.com", n);
        hiera_options o = {.codedir = dir, .environmentpath = env, .hiera_config = cfg, .node = name,
                           .facts = facts, .cache = c};
        hiera_error err = {0};
        hiera *h = hiera_new(&o, &err);
        hiera_value_decref(facts);
        if (!h) {
            fprintf(stderr, "count: %s\n", err.message);
            return 1;
        }
        for (int k = 0; k < keys; k++) {
            hiera_value *v = NULL;
            snprintf(key, sizeof key, "%s_%d", kind, k);
            lookups++;
            if (hiera_lookup_key(h, key, &v, &err) == HIERA_OK && hiera_value_kind(v) == HIERA_STRING &&
                strncmp(hiera_value_string(v), "the value of key number ", 24) == 0)
                found++;
            else if (err.message)
                fprintf(stderr, "count: %s: %s\n", key, err.message);
            hiera_value_decref(v);
            hiera_error_clear(&err);
        }
        hiera_free(h);
        if (!common) {
            decrypts += eyaml_decrypt_count(cache_eyaml(c));
            hiera_cache_free(c);
        }
    }
    if (common) {
        decrypts = eyaml_decrypt_count(cache_eyaml(common));
        hiera_cache_free(common);
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    printf("%ld %ld %.4f %lu\n", lookups, found, (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9, decrypts);
    return found == lookups ? 0 : 1;
}
EOF
    # shellcheck disable=SC2046
    if cc -std=c11 -D_GNU_SOURCE -O2 -I"$here/include" -I"$here/src" count.c "$LIB" \
        $(pkg-config --libs yaml-0.1 oniguruma openssl 2>/dev/null || echo -lyaml -lonig -lcrypto) -lm \
        -o count 2> cc.txt; then
        echo "libhiera in process (C API, no facts files or output; decryptions counted by eyaml.c):"
        for mode in shared per-node; do
            nn=$NODES; [ $mode = per-node ] && nn=$PER_NODE_NODES
            for kind in plain secret; do
                r=$(./count "$work" $kind "$nn" "$KEYS" $mode) || { echo "eyaml.sh: count failed: $r" >&2; exit 1; }
                set -- $r
                label="$kind, cache $mode"
                printf '  %-34s %9.4fs CPU  %8s us/lookup  %6s decryptions for %s lookups\n' "$label" "$3" "$(us "$3" "$1")" "$4" "$1"
                eval "cpu_${kind}_$(echo $mode | tr - _)=$3"
            done
        done
        # shellcheck disable=SC2154
        awk -v a="$cpu_secret_per_node" -v b="$cpu_plain_per_node" -v n="$((PER_NODE_NODES * KEYS))" \
            'BEGIN { printf "  one decryption (per-node secret - plain, per lookup): %.0f us\n", (a - b) * 1e6 / n }'
    else
        echo "libhiera in process: skipped (count.c did not build against $LIB: $(head -1 cc.txt))"
    fi
else
    echo "libhiera in process: skipped (no $LIB or no cc)"
fi
echo

# ---------------------------------------------------------------- Puppet, in process
if [ -n "${NO_PUPPET:-}" ] || ! command -v puppet >/dev/null 2>&1 || ! command -v ruby >/dev/null 2>&1; then
    echo "Puppet: skipped (NO_PUPPET set, or puppet not installed)"
    exit 0
fi
cat > puppet-bench.rb <<'EOF'
# One Ruby process: PUPPET_COMPILES fresh compilers (generate_scope, as `puppet lookup` and every
# catalog compile make one), KEYS lookups in each; Pkcs7.decrypt calls are counted.
require 'puppet'
require 'puppet/application/lookup'
$decrypts = 0
class EyamlBench < Puppet::Application::Lookup
  def run_kind(kind, compiles, keys)
    names = (0...keys).map { |i| "#{kind}_#{i}" }
    d0 = $decrypts
    found = 0
    c0 = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
    w0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    compiles.times do
      generate_scope do |scope|
        names.each do |k|
          v = Puppet::Pops::Lookup.lookup(k, nil, nil, false, nil, Puppet::Pops::Lookup::Invocation.new(scope, {}, {}, nil))
          found += 1 if v.is_a?(String) && v.start_with?('the value of key number ')
        end
      end
    end
    c = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID) - c0
    w = Process.clock_gettime(Process::CLOCK_MONOTONIC) - w0
    puts format('%s %d %d %.4f %.4f %d', kind, compiles * keys, found, c, w, $decrypts - d0)
  end

  def main
    require 'hiera/backend/eyaml/encryptors/pkcs7'
    Hiera::Backend::Eyaml::Encryptors::Pkcs7.singleton_class.prepend(Module.new do
      def decrypt(ciphertext)
        $decrypts += 1
        super
      end
    end)
    compiles = Integer(ENV['PUPPET_COMPILES'])
    keys = Integer(ENV['KEYS'])
    run_kind('plain', 1, keys) # warm-up: loads the functions and the data once
    run_kind('plain', compiles, keys)
    run_kind('secret', compiles, keys)
    exit(0)
  end
end
args = ARGV + ['unused']
Puppet.initialize_settings(args, true)
EyamlBench.new(Puppet::Util::CommandLine.new('lookup', args)).run
EOF
export PUPPET_COMPILES KEYS
if ! ruby puppet-bench.rb $COMMON --environment production --node node0.example.com --facts "$work/one.yaml" > puppet.txt 2> puppet-err.txt; then
    echo "Puppet: failed: $(tail -3 puppet-err.txt)"
    exit 1
fi
n=$((PUPPET_COMPILES * KEYS))
echo "Puppet 7 in process ($PUPPET_COMPILES compiles x $KEYS keys = $n lookups per kind; every compile starts a fresh lookup cache):"
tail -2 puppet.txt | while read -r kind count found cpu wall dec; do
    [ "$found" -eq "$count" ] || echo "  (only $found of $count $kind lookups gave the expected value)"
    label=$([ "$kind" = plain ] && echo "plain keys" || echo "encrypted keys")
    printf '  %-34s %9.4fs CPU  %8s us/lookup  %6s decryptions  (wall %s s; %s lookups would take %s s CPU)\n' \
        "$label ($count lookups)" "$cpu" "$(us "$cpu" "$count")" "$dec" "$wall" "$LOOKUPS" \
        "$(awk -v c="$cpu" -v n="$count" -v l="$LOOKUPS" 'BEGIN { printf "%.1f", c * l / n }')"
    echo "$kind $cpu" >> puppet-cpu.txt
done
awk -v n=$n '$1 == "plain" { p = $2 } $1 == "secret" { s = $2 } END { printf "  one decryption (secret - plain, per lookup): %.0f us\n", (s - p) * 1e6 / n }' puppet-cpu.txt
echo
echo "Puppet caches a decrypted key for the rest of its compile (eyaml_lookup_key's context cache):"
echo "each compile decrypts every key it looks up again; hiera decrypts each block once per process."

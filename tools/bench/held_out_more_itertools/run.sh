#!/usr/bin/env bash
# Held-out checks on a real project: `warden propose` with held-out tests refuses a memorizing
# change to more_itertools.interleave_longest (it answers the visible tests' inputs from a table)
# and accepts the honest one; without them the memorizing change is accepted. Then: nothing of
# the held-out tests in the refused run's output or the ledger before the reveal, and replay
# before (pending) and after the reveal.
#
#   tools/bench/held_out_more_itertools/run.sh MORE_ITERTOOLS_GIT [WARDEN]
# MORE_ITERTOOLS_GIT: a clone or mirror of github.com/more-itertools/more-itertools (any
# recent main: break.py, restore.py and memorize.py edit interleave_longest by its text).
# WARDEN: the binary (default build/warden). Work goes to a fresh directory under /tmp.
# Inputs beside this script: break.py, restore.py, memorize.py (tree edits) and held/ (the
# held-out tests).
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
MIRROR=${1:?usage: run.sh MORE_ITERTOOLS_GIT [WARDEN]}
WARDEN=$(realpath "${2:-build/warden}")
H=$(mktemp -d /tmp/warden-held-out-real-XXXXXX)
O=$H/out          # ledgers, outputs, exports of this run
CLONE=$H/mi
VISIBLE='python3 -B -m unittest tests.test_more -v'
HELDCHK='python3 -B -m unittest discover -s held_out -v'
TIMEOUT=${TIMEOUT:-300}
die() { echo "run.sh: $*" >&2; exit 2; }

mkdir -p "$O"

# 1. clone at HEAD, base commit with interleave_longest broken (stops at the shortest input)
git clone -q "$MIRROR" "$CLONE" || die clone
cd "$CLONE"
git config user.name "heldout demo"; git config user.email demo@example.invalid
echo "upstream HEAD: $(git rev-parse HEAD)"
git checkout -q -b heldout-base
python3 "$SRC/break.py" more_itertools/more.py || die break
git commit -qam "base: break interleave_longest (stops at the shortest input)" || die commit
BASE=$(git rev-parse HEAD); echo "base commit:   $BASE"

# 2. patches against BASE (plain `git diff` output)
python3 "$SRC/restore.py"  more_itertools/more.py && git diff > "$O/honest.patch"     && git checkout -q -- .
python3 "$SRC/memorize.py" more_itertools/more.py && git diff > "$O/memorizing.patch" && git checkout -q -- .
[ -s "$O/honest.patch" ] && [ -s "$O/memorizing.patch" ] || die patches

# 3. held-out dir (copied so its path is fresh)
cp -r "$SRC/held" "$O/held"
HELD_NAMES=$(grep -ho 'def test_[a-z_0-9]*' "$O/held"/*.py | sed 's/def //')
LEAK_PAT="$(echo $HELD_NAMES | tr ' ' '|')|HeldOutInterleaveLongest|test_held_interleave_longest|XYZW"

# local preflight (plain python, outside warden): visible class / held-out results per tree
echo; echo "local preflight (visible InterleaveLongestTests | held-out):"
for p in base honest memorizing; do
  git worktree add -q "$H/sanity" "$BASE"
  ( cd "$H/sanity"; [ $p = base ] || git apply "$O/$p.patch"; cp -r "$O/held" held_out
    v=$(python3 -B -m unittest tests.test_more.InterleaveLongestTests 2>&1 | tail -1)
    h=$(python3 -B -m unittest discover -s held_out 2>&1 | tail -1)
    printf '  %-11s %-22s | %s\n' $p "$v" "$h" )
  git worktree remove --force "$H/sanity"
done

# 4. the warden runs
declare -A RC SECS DEC CODES DIGEST
propose() {  # NAME PATCH [held-out yes/no]
  local n=$1 patch=$2 ho=$3 extra=()
  [ "$ho" = yes ] && extra=(--held-out "$O/held" --held-out-check "$HELDCHK")
  local cmd=("$WARDEN" propose "$patch" --repo "$CLONE" --base "$BASE" --branch "warden/$n"
             --ledger "$O/L-$n" --cache "$O/cache" --step-timeout "$TIMEOUT" --json
             --check "$VISIBLE" "${extra[@]}")
  printf '%q ' "${cmd[@]}" > "$O/$n.cmd"; echo >> "$O/$n.cmd"
  local t0=$(date +%s.%N)
  "${cmd[@]}" > "$O/$n.out" 2> "$O/$n.err"; RC[$n]=$?
  SECS[$n]=$(python3 -c "print(f'{$(date +%s.%N)-$t0:.1f}')")
  eval "$(python3 - "$O/$n.out" <<'PY'
import json, sys, shlex
r = [json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1]
print("d=" + shlex.quote(r.get("decision", "?")))
print("c=" + shlex.quote(",".join((r.get("refusal") or {}).get("codes", [])) or "-"))
print("h=" + shlex.quote(r.get("held_out") or "-"))
PY
)"
  DEC[$n]=$d; CODES[$n]=$c; DIGEST[$n]=$h
}
cd "$H"
echo; echo "running warden propose (4 runs) ..."
propose mem-heldout    "$O/memorizing.patch" yes
propose honest-heldout "$O/honest.patch"     yes
propose mem-cheat      "$O/memorizing.patch" no
propose honest-plain   "$O/honest.patch"     no

# leak check before any reveal: refused proposal's stdout+stderr, ledger dir minus held-out/, its export
"$WARDEN" ledger export "$O/L-mem-heldout" "$O/export-mem-heldout" > /dev/null
LEAK=$( { cat "$O/mem-heldout.out" "$O/mem-heldout.err";
          find "$O/L-mem-heldout" -path "$O/L-mem-heldout/held-out" -prune -o -type f -print0 | xargs -0 cat;
          find "$O/export-mem-heldout" -type f -print0 | xargs -0 cat; } | grep -a -o -E "$LEAK_PAT" | sort -u | tr '\n' ' ')
SEALED=$(grep -a -r -l -E "$LEAK_PAT" "$O/L-mem-heldout/held-out" 2>/dev/null | wc -l)

# replay before / after reveal
replay() {  # NAME TAG
  "$WARDEN" replay "$O/L-$1" --json --repo "$CLONE" > "$O/replay-$1-$2.json" 2> "$O/replay-$1-$2.err"
  local rc=$?
  python3 - "$O/replay-$1-$2.json" $rc <<'PY'
import json, sys
try: r = json.load(open(sys.argv[1]))
except Exception as e: print(f"rc={sys.argv[2]} unparsable: {e}"); sys.exit()
def find(o, k):
    if isinstance(o, dict):
        if k in o: return o[k]
        for v in o.values():
            x = find(v, k)
            if x is not None: return x
    elif isinstance(o, list):
        for v in o:
            x = find(v, k)
            if x is not None: return x
fmt = lambda v: len(v) if isinstance(v, list) else v
print(f"rc={sys.argv[2]} ok={r.get('ok')} pending_reveal={r.get('pending_reveal')} revealed={r.get('revealed')} decisions={r.get('decisions')} commits={r.get('commits')} branches={r.get('branches')}")
PY
}
declare -A RP
for n in mem-heldout honest-heldout; do
  RP[$n-before]=$(replay $n before)
  "$WARDEN" held-out reveal "${DIGEST[$n]}" --ledger "$O/L-$n" --json > "$O/reveal-$n.json" 2> "$O/reveal-$n.err"
  RP[$n-reveal-rc]=$?
  RP[$n-after]=$(replay $n after)
done

# positive control: after the reveal the names are in the ledger proper (so the grep would see a leak)
AFTER=$(find "$O/L-mem-heldout" -path "$O/L-mem-heldout/held-out" -prune -o -type f -print0 | xargs -0 cat | grep -a -o -E "$LEAK_PAT" | sort -u | wc -l)

# summary
echo
printf '%-15s %-7s %-4s %-7s %-10s %-16s\n' run held-out rc secs decision codes
for n in mem-heldout honest-heldout mem-cheat honest-plain; do
  ho=no; case $n in *heldout) ho=yes;; esac
  printf '%-15s %-7s %-4s %-7s %-10s %-16s\n' $n $ho "${RC[$n]}" "${SECS[$n]}" "${DEC[$n]}" "${CODES[$n]}"
done
echo
for n in mem-heldout honest-heldout; do
  echo "$n bundle ${DIGEST[$n]}"
  echo "  replay before reveal: ${RP[$n-before]}"
  echo "  reveal rc=${RP[$n-reveal-rc]}; replay after: ${RP[$n-after]}"
done
echo
echo "leak check (names $LEAK_PAT) in refused run's stdout+stderr, ledger minus held-out/, export: ${LEAK:-none found}"
echo "  (controls: files under held-out/ holding them: $SEALED; distinct names in ledger minus held-out/ after reveal: $AFTER)"
echo "outputs in $O (*.cmd = exact commands)"

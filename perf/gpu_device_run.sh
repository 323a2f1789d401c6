#!/usr/bin/env bash
# The one call on a lent GPU machine (../shared/gpu.md): every section of perf/gpu.py, each in its own
# process under its own time limit, within about 8 minutes in all; the figures and logs land in $OUT.
#
#   bash perf/gpu_device_run.sh            on the GPU machine, from the repository root
#   bash perf/gpu_device_run.sh --small    anywhere (a CPU): the same run with small models, a dry run
#
# The machine has no network: the packages its Python lacks travel as wheels in .gpu-wheels/ (carried with
# the run; perf/README.md says how they are downloaded) and are installed with pip --no-index --no-deps into
# a temporary folder put on PYTHONPATH before the machine's own site-packages. llguidance's newest wheel
# needs glibc 2.31: where pip refuses it, the one in .gpu-wheels/fallback/ (glibc 2.28) is installed.
#
# Environment: OUT (default: a new temporary folder), WHEELS (default: .gpu-wheels), PYTHON (default:
# python3), BUDGET_S (the whole run's seconds, default 540), SECTIONS (default: all, in the order below),
# PROFILE=1 (also torch.profiler traces of a stretch of the VQAScore and JSON sections, in $OUT/profiles).
# Written to $OUT: run.log (everything printed), <section>.log (each section's output), figures.jsonl (each
# figure as a JSON line, written as it is measured) and figures.json (all of them by section, with each
# section's exit status and seconds: 124 or 137 when its time limit stopped it; what it measured is kept).
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 2
small=""
[ "${1:-}" = "--small" ] && small="--small"
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/t2ireason-gpu-out-XXXXXX")}
mkdir -p "$OUT"
python=${PYTHON:-python3}
budget=${BUDGET_S:-540}
wheels=${WHEELS:-$root/.gpu-wheels}
start=$(date +%s)
work=$(mktemp -d "${TMPDIR:-/tmp}/t2ireason-gpu-work-XXXXXX")  # built models (tens of GB), not in $OUT
trap 'rm -rf "$work"' EXIT
log="$OUT/run.log"
say() { echo "$*" | tee -a "$log"; }

# section and its own time limit (seconds); their sum stays within the budget
limits=(vqascore_llava:130 json:220 vqascore_qwen:100 generation:60 data_parallel:240)  # 2 rounds: 4 commands
[ -n "$small" ] && limits=(vqascore_llava:150 json:150 vqascore_qwen:120 generation:120 data_parallel:180)

say "gpu_device_run: $(date -u +%FT%TZ) root=$root out=$OUT budget=${budget}s ${small:-full size}"
if ls "$wheels"/*.whl >/dev/null 2>&1; then
  site="$work/site"
  if ! "$python" -m pip install --no-index --no-deps --quiet --target "$site" "$wheels"/*.whl >"$OUT/pip.log" 2>&1; then
    # one refused wheel fails the whole install: the others first, then llguidance with its fallback
    others=$(ls "$wheels"/*.whl | grep -v '/llguidance-')
    "$python" -m pip install --no-index --no-deps --quiet --target "$site" $others >>"$OUT/pip.log" 2>&1 \
      || say "pip could not install the wheels (see pip.log): $(tail -1 "$OUT/pip.log")"
    "$python" -m pip install --no-index --no-deps --quiet --target "$site" "$wheels"/llguidance-*.whl >>"$OUT/pip.log" 2>&1 \
      || { say "llguidance's wheel refused here: installing $(ls "$wheels"/fallback/llguidance-*.whl 2>/dev/null)"
           "$python" -m pip install --no-index --no-deps --quiet --target "$site" "$wheels"/fallback/llguidance-*.whl \
             >>"$OUT/pip.log" 2>&1 || say "no llguidance installed (see pip.log)"; }
  fi
  export PYTHONPATH="$root:$site${PYTHONPATH:+:$PYTHONPATH}"
  say "installed from $wheels in $(( $(date +%s) - start )) s: $(ls "$site" | grep -c 'dist-info$') packages"
else
  say "no wheels in $wheels: the installed packages are used"
  export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
fi

statuses=""
for entry in "${limits[@]}"; do
  section=${entry%%:*}
  limit=${entry##*:}
  case ",${SECTIONS:-$section}," in *",$section,"*) ;; *) continue ;; esac
  left=$(( budget - ($(date +%s) - start) ))
  [ "$limit" -gt "$left" ] && limit=$left
  if [ "$limit" -lt 10 ]; then
    say "== $section: skipped, ${left}s of the budget left"
    statuses="$statuses $section:skipped:0"
    continue
  fi
  say "== $section (at most ${limit}s)"
  began=$(date +%s)
  # -k: a section that ignores the TERM is killed 10 s later; its printed figures stay in its log
  timeout -k 10 "$limit" "$python" -u perf/gpu.py $small --only "$section" --work "$work/models" \
    --figures "$OUT/figures.jsonl" ${PROFILE:+--profile "$OUT/profiles"} >"$OUT/$section.log" 2>&1
  status=$?
  # the whole log to run.log; on the screen each figure without its details (name=value, section.name=value)
  grep -v -e '%|' -e '^\s*$' "$OUT/$section.log" | tee -a "$log" | grep -E '^[^.= ]+(\.[^.= ]+)?=' || true
  say "== $section: exit $status in $(( $(date +%s) - began ))s"
  statuses="$statuses $section:$status:$(( $(date +%s) - began ))"
done

"$python" - "$OUT" "$statuses" <<'EOF'
import json, sys
from pathlib import Path

out = Path(sys.argv[1])
figures = {}
lines = (out / "figures.jsonl").read_text().splitlines() if (out / "figures.jsonl").exists() else []
for line in lines:
    row = json.loads(line)
    figures.setdefault(row.pop("section"), {})[row.pop("name")] = row
runs = {}
for item in sys.argv[2].split():
    section, status, seconds = item.split(":")
    runs[section] = {"exit": status, "seconds": int(seconds),
                     "stopped_by_time_limit": status in ("124", "137")}
(out / "figures.json").write_text(json.dumps({"runs": runs, "figures": figures}, indent=1, default=str) + "\n")
missed = [f"{s}.{n}" for s, rows in figures.items() for n, r in rows.items() if r.get("met") is False]
print(f"figures.json: {sum(map(len, figures.values()))} figures; targets missed: {', '.join(missed) or 'none'}")
EOF
say "gpu_device_run: done in $(( $(date +%s) - start ))s"

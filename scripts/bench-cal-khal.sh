#!/usr/bin/env bash
# bench-cal-khal: Hestia's calendar end to end against `khal list` on the
# same generated vdir (EVENTS events, a tenth recurring, over three years
# around 2026), after both have indexed it once:
#   - index: `hestia cal import` against khal's first `list` (which indexes);
#   - CLI: `hestia cal agenda` for a month, one process per query (start,
#     config, index open, the SQL path over materialized instances);
#   - HTTP: GET /api/calendar/agenda for a month from a running daemon
#     (the in-memory horizon), timed by curl;
#   - khal list for the same month.
# Prints medians. Usage: scripts/bench-cal-khal.sh [EVENTS] (default 5000).
# Needs khal and curl.
set -euo pipefail
n=${1:-5000}
command -v khal >/dev/null || { echo "khal not installed (apt-get install khal)"; exit 1; }
command -v curl >/dev/null || { echo "curl not installed"; exit 1; }
root=$(mktemp -d)
daemon=""
cleanup() {
  if [[ -n $daemon ]]; then kill "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; fi
  rm -rf "$root"
}
trap cleanup EXIT
cd "$(dirname "$0")/.."
go build -o "$root/hestia" ./cmd/hestia
cal="$root/cal/work"
mkdir -p "$cal"
# Dates computed once; the loop only formats.
days=()
for ((d = 0; d < 3 * 365; d++)); do days+=("$(date -u -d "2025-01-01 +$d days" +%Y%m%d)"); done
rules=($'RRULE:FREQ=WEEKLY;BYDAY=MO,WE;COUNT=40\r\n' $'RRULE:FREQ=DAILY;COUNT=60\r\n' $'RRULE:FREQ=MONTHLY;BYMONTHDAY=15\r\n' $'RRULE:FREQ=WEEKLY;INTERVAL=2\r\n')
for ((i = 0; i < n; i++)); do
  day=${days[$(( (i * 7919) % ${#days[@]} ))]}; h=$(( 8 + i % 10 ))
  rule=""
  if (( i % 10 == 0 )); then rule=${rules[$(( (i / 10) % 4 ))]}; fi
  printf 'BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//bench//EN\r\nBEGIN:VEVENT\r\nUID:ev-%d\r\nDTSTAMP:20250101T000000Z\r\nDTSTART;TZID=Europe/Rome:%sT%02d0000\r\nDTEND;TZID=Europe/Rome:%sT%02d3000\r\n%sSUMMARY:event %d\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n' \
    "$i" "$day" "$h" "$day" "$h" "$rule" "$i" > "$cal/ev-$i.ics"
done
mkdir -p "$root/khal"
cat > "$root/khal/config" <<CFG
[calendars]
[[work]]
path = $cal
[locale]
timeformat = %H:%M
dateformat = %Y-%m-%d
longdateformat = %Y-%m-%d
datetimeformat = %Y-%m-%d %H:%M
longdatetimeformat = %Y-%m-%d %H:%M
local_timezone = Europe/Rome
default_timezone = Europe/Rome
[sqlite]
path = $root/khal/khal.db
CFG
export HESTIA_HOME="$root/home" HESTIA_CALENDAR_TIMEZONE=Europe/Rome
month=$(date -u +%Y-%m-01)
next=$(date -u -d "$month +1 month" +%Y-%m-01)
t0=$(date +%s.%N); "$root/hestia" cal import --name work "$cal" >/dev/null; t1=$(date +%s.%N)
khal -c "$root/khal/config" list "$month" 31d >/dev/null; t2=$(date +%s.%N)
echo "index $n events: hestia $(echo "$t1 - $t0" | bc) s, khal (first list) $(echo "$t2 - $t1" | bc) s"
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
run() { local s e; s=$(date +%s%N); "$@" >/dev/null; e=$(date +%s%N); echo $(( (e - s) / 1000000 )); }
instances=$("$root/hestia" cal agenda --from "$month" --to "$next" --limit 100000 --json | grep -o '"uid"' | wc -l)
h=$(for _ in 1 2 3 4 5; do run "$root/hestia" cal agenda --from "$month" --to "$next" --limit 5000; done | median)
k=$(for _ in 1 2 3 4 5; do run khal -c "$root/khal/config" list "$month" 31d; done | median)
echo "month agenda ($instances instances), median of 5: hestia cal agenda ${h} ms, khal list ${k} ms"
# CPU time (user+sys) of one process each: the cost without the machine's
# load, which on a shared box dominates the wall figures above.
if [[ -x /usr/bin/time ]]; then
  cpu() { /usr/bin/time -f '%U %S' "$@" 2>&1 >/dev/null | tail -1 | awk '{printf "%d", ($1 + $2) * 1000}'; }
  echo "month agenda CPU: hestia cal agenda $(cpu "$root/hestia" cal agenda --from "$month" --to "$next" --limit 5000) ms, khal list $(cpu khal -c "$root/khal/config" list "$month" 31d) ms"
fi

port=$(( 20000 + RANDOM % 20000 ))
"$root/hestia" serve --addr "127.0.0.1:$port" >"$root/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.2; done
tok=$(cat "$(find "$HESTIA_HOME" -name auth-token | head -1)")
get() { curl -s -o /dev/null -w '%{time_total}\n' -H "Authorization: Bearer $tok" "http://127.0.0.1:$port/api/calendar/agenda?from=$month&to=$next&limit=1000"; }
# The first query starts the in-memory snapshot; give it time to build.
get >/dev/null
for _ in $(seq 1 60); do
  t=$(get)
  if (( $(echo "$t < 0.05" | bc) )); then break; fi
  sleep 0.5
done
d=$(for _ in $(seq 1 21); do get; done | awk '{print $1 * 1000}' | median)
echo "month agenda over HTTP from the daemon, median of 21: ${d} ms (curl time_total)"

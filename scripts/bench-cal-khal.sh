#!/usr/bin/env bash
# bench-cal-khal: `hestia cal agenda` end to end (process start, config,
# index open, a month's agenda) against `khal list` on the same generated
# vdir, after both have indexed it once. Prints the median of 5 runs each.
# Usage: scripts/bench-cal-khal.sh [EVENTS] (default 5000). Needs khal.
set -euo pipefail
n=${1:-5000}
command -v khal >/dev/null || { echo "khal not installed (apt-get install khal)"; exit 1; }
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
cd "$(dirname "$0")/.."
go build -o "$root/hestia" ./cmd/hestia
cal="$root/cal/work"
mkdir -p "$cal"
for ((i = 0; i < n; i++)); do
  d=$(( i % 365 )); h=$(( 8 + i % 10 ))
  day=$(date -u -d "2026-01-01 +$d days" +%Y%m%d)
  rule=""
  if (( i % 10 == 0 )); then rule=$'RRULE:FREQ=WEEKLY;COUNT=20\r\n'; fi
  printf 'BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//bench//EN\r\nBEGIN:VEVENT\r\nUID:ev-%d\r\nDTSTAMP:20260101T000000Z\r\nDTSTART;TZID=Europe/Rome:%sT%02d0000\r\nDTEND;TZID=Europe/Rome:%sT%02d3000\r\n%sSUMMARY:event %d\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n' \
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
t0=$(date +%s.%N); "$root/hestia" cal import --name work "$cal" >/dev/null; t1=$(date +%s.%N)
khal -c "$root/khal/config" list 2026-03-01 31d >/dev/null; t2=$(date +%s.%N)
echo "index $n events: hestia $(echo "$t1 - $t0" | bc) s, khal (first list) $(echo "$t2 - $t1" | bc) s"
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
run() { local s e; s=$(date +%s%N); "$@" >/dev/null; e=$(date +%s%N); echo $(( (e - s) / 1000000 )); }
h=$(for _ in 1 2 3 4 5; do run "$root/hestia" cal agenda --from 2026-03-01 --to 2026-04-01 --limit 5000; done | median)
k=$(for _ in 1 2 3 4 5; do run khal -c "$root/khal/config" list 2026-03-01 31d; done | median)
echo "month agenda, median of 5: hestia cal agenda ${h} ms, khal list ${k} ms"

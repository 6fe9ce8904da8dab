package calendar

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/emersion/go-ical"
)

// posixPrefix marks an event Zone that is a POSIX TZ rule derived from a
// custom VTIMEZONE ("posix:<STD>-1<DST>,M3.5.0/2,M10.5.0/3"). Storing the
// rule itself keeps an event self-describing: re-expansion needs no copy of
// the VTIMEZONE.
const posixPrefix = "posix:"

// posixFromVTimezone turns the current yearly rules of a custom VTIMEZONE
// into a POSIX TZ string, so zones no IANA name describes (Outlook's
// "(UTC+01:00) Amsterdam, Berlin, …", vendor exports) keep their daylight
// saving time. It handles the shape nearly every writer uses: one STANDARD
// and one DAYLIGHT observance, each a FREQ=YEARLY rule with BYMONTH and an
// nth (or last) weekday, possibly written as BYDAY plus a seven-day
// BYMONTHDAY range. Anything else returns false and the caller falls back
// to a fixed offset.
func posixFromVTimezone(vtz *ical.Component) (string, bool) {
	std, dst := latestObservance(vtz, "STANDARD"), latestObservance(vtz, "DAYLIGHT")
	if std == nil || dst == nil {
		return "", false
	}
	stdOff, ok1 := propOffset(std, "TZOFFSETTO")
	dstOff, ok2 := propOffset(dst, "TZOFFSETTO")
	if !ok1 || !ok2 || stdOff == dstOff {
		return "", false
	}
	toDST, ok1 := posixRule(dst)
	toSTD, ok2 := posixRule(std)
	if !ok1 || !ok2 {
		return "", false
	}
	return posixName(std, stdOff) + posixOffset(-stdOff) + posixName(dst, dstOff) + posixOffset(-dstOff) + "," + toDST + "," + toSTD, true
}

// latestObservance returns the observance of kind whose rule is still in
// force: no UNTIL, or else the latest DTSTART.
func latestObservance(vtz *ical.Component, kind string) *ical.Component {
	var best *ical.Component
	var bestStart string
	for _, c := range vtz.Children {
		if c.Name != kind {
			continue
		}
		rr := c.Props.Get("RRULE")
		if rr == nil {
			continue
		}
		if strings.Contains(strings.ToUpper(rr.Value), "UNTIL=") {
			continue
		}
		start := ""
		if p := c.Props.Get("DTSTART"); p != nil {
			start = p.Value
		}
		if best == nil || start > bestStart {
			best, bestStart = c, start
		}
	}
	return best
}

func propOffset(c *ical.Component, name string) (int, bool) {
	p := c.Props.Get(name)
	if p == nil {
		return 0, false
	}
	return parseUTCOffset(p.Value)
}

// posixRule renders an observance's onset as "Mm.w.d/time" (the wall-clock
// time of the offset in force before it, as DTSTART is written).
func posixRule(c *ical.Component) (string, bool) {
	rr, ds := c.Props.Get("RRULE"), c.Props.Get("DTSTART")
	if rr == nil || ds == nil {
		return "", false
	}
	parts := map[string]string{}
	for _, kv := range strings.Split(strings.ToUpper(rr.Value), ";") {
		k, v, _ := strings.Cut(kv, "=")
		parts[k] = v
	}
	if parts["FREQ"] != "YEARLY" || (parts["INTERVAL"] != "" && parts["INTERVAL"] != "1") || parts["COUNT"] != "" {
		return "", false
	}
	month, err := strconv.Atoi(parts["BYMONTH"])
	if err != nil || month < 1 || month > 12 {
		return "", false
	}
	byday := parts["BYDAY"]
	if len(byday) < 2 {
		return "", false
	}
	wd := strings.Index("SUMOTUWETHFRSA", byday[len(byday)-2:])
	if wd < 0 || wd%2 != 0 {
		return "", false
	}
	week := 0
	if n := byday[:len(byday)-2]; n != "" {
		k, err := strconv.Atoi(strings.TrimPrefix(n, "+"))
		switch {
		case err != nil:
			return "", false
		case k == -1:
			week = 5
		case k >= 1 && k <= 4:
			week = k
		default:
			return "", false
		}
	} else {
		// BYDAY=SU;BYMONTHDAY=8,9,…,14 is the second Sunday.
		days := strings.Split(parts["BYMONTHDAY"], ",")
		first, err := strconv.Atoi(days[0])
		if len(days) != 7 || err != nil {
			return "", false
		}
		switch {
		case first >= 1 && first <= 22 && (first-1)%7 == 0:
			week = (first-1)/7 + 1
		case first < 0 && first == -7:
			week = 5
		default:
			return "", false
		}
	}
	v := strings.TrimSuffix(strings.TrimSpace(ds.Value), "Z")
	_, clock, ok := strings.Cut(v, "T")
	if !ok || len(clock) != 6 {
		return "", false
	}
	h, e1 := strconv.Atoi(clock[:2])
	m, e2 := strconv.Atoi(clock[2:4])
	s, e3 := strconv.Atoi(clock[4:])
	if e1 != nil || e2 != nil || e3 != nil {
		return "", false
	}
	return fmt.Sprintf("M%d.%d.%d/%s", month, week, wd/2, posixClock(h*3600+m*60+s)), true
}

// posixName quotes an observance's TZNAME (or its offset) in the <…> form,
// which allows digits and signs.
func posixName(c *ical.Component, off int) string {
	name := ""
	if p := c.Props.Get("TZNAME"); p != nil {
		name = strings.Map(func(r rune) rune {
			if r < 128 && (r == '+' || r == '-' || r >= '0' && r <= '9' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z') {
				return r
			}
			return -1
		}, p.Value)
	}
	if len(name) < 3 {
		name = posixOffset(off)
		if !strings.HasPrefix(name, "-") {
			name = "+" + name
		}
	}
	return "<" + name + ">"
}

// posixOffset writes seconds as [-]h[:mm[:ss]].
func posixOffset(sec int) string {
	sign := ""
	if sec < 0 {
		sign, sec = "-", -sec
	}
	return sign + posixClock(sec)
}

func posixClock(sec int) string {
	h, m, s := sec/3600, sec/60%60, sec%60
	switch {
	case s != 0:
		return fmt.Sprintf("%d:%02d:%02d", h, m, s)
	case m != 0:
		return fmt.Sprintf("%d:%02d", h, m)
	}
	return strconv.Itoa(h)
}

// locationFromPosix builds a location from a POSIX TZ rule: a TZif file with
// no transitions whose footer carries the rule, which the time package
// applies to every instant.
func locationFromPosix(name, rule string) (*time.Location, error) {
	var b bytes.Buffer
	header := func(version byte) {
		b.WriteString("TZif")
		b.WriteByte(version)
		b.Write(make([]byte, 15))
		// isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt
		for _, n := range []uint32{0, 0, 0, 0, 1, 1} {
			_ = binary.Write(&b, binary.BigEndian, n)
		}
	}
	ttinfo := func() {
		b.Write([]byte{0, 0, 0, 0, 0, 0}) // utoff 0, isdst 0, desigidx 0
		b.WriteByte(0)                    // an empty designation
	}
	header('2')
	ttinfo()
	header('2')
	ttinfo()
	b.WriteString("\n" + rule + "\n")
	loc, err := time.LoadLocationFromTZData(name, b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("time zone rule %q: %w", rule, err)
	}
	return loc, nil
}

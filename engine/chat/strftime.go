package chat

import (
	"fmt"
	"strings"
	"time"
)

// strftime formats t like C's strftime, which Python's strftime_now
// calls: %a %A %b %B %d %e %H %I %j %m %M %p %S %w %y %Y %Z %z %% and the
// glibc '-' flag that drops padding ("%-d"). Other directives are kept
// as written.
func strftime(t time.Time, format string) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 == len(format) {
			b.WriteByte(c)
			continue
		}
		start := i
		i++
		pad := true
		if format[i] == '-' && i+1 < len(format) {
			pad = false
			i++
		}
		num := func(v, width int) {
			if pad {
				fmt.Fprintf(&b, "%0*d", width, v)
			} else {
				fmt.Fprint(&b, v)
			}
		}
		switch format[i] {
		case 'a':
			b.WriteString(t.Format("Mon"))
		case 'A':
			b.WriteString(t.Format("Monday"))
		case 'b':
			b.WriteString(t.Format("Jan"))
		case 'B':
			b.WriteString(t.Format("January"))
		case 'd':
			num(t.Day(), 2)
		case 'e':
			if pad {
				fmt.Fprintf(&b, "%2d", t.Day())
			} else {
				fmt.Fprint(&b, t.Day())
			}
		case 'H':
			num(t.Hour(), 2)
		case 'I':
			num((t.Hour()+11)%12+1, 2)
		case 'j':
			num(t.YearDay(), 3)
		case 'm':
			num(int(t.Month()), 2)
		case 'M':
			num(t.Minute(), 2)
		case 'p':
			b.WriteString(t.Format("PM"))
		case 'S':
			num(t.Second(), 2)
		case 'w':
			num(int(t.Weekday()), 1)
		case 'y':
			num(t.Year()%100, 2)
		case 'Y':
			num(t.Year(), 1)
		case 'Z':
			b.WriteString(t.Format("MST"))
		case 'z':
			b.WriteString(t.Format("-0700"))
		case '%':
			b.WriteByte('%')
		default:
			b.WriteString(format[start : i+1])
		}
	}
	return b.String()
}

package systems

import "strconv"

func itoa(n int) string     { return strconv.Itoa(n) }
func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

func boolAttr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

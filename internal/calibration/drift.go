package calibration

import "math"

// Drift is found by looking, every Every observations, at whether the
// newest Window observations of a rater on one rubric item hold more of an
// event — a miss against gold (accuracy), an answer above gold (leniency)
// or one below it (severity) — than the rater's own record before them.
//
// Each look is an exact one-sided test (Fisher's): given how many events
// the whole record so far holds, a steady rater (every observation an
// independent draw at the same rate, whatever that rate is) puts them
// anywhere in it with equal chance, so the count in the window follows the
// hypergeometric distribution and its tail is the look's p-value. The
// rater's in-control rate is never estimated, so no short baseline can
// make the chart alarm more often than planned: this is where a chart
// with limits around an estimate of the rater's level (as an EWMA or a
// CUSUM with a plug-in rate) fails, alarming whenever the first answers
// happened to look better than the rater is.
//
// The chance of a false alarm is held by Bonferroni's inequality: a
// chart gives each of its looks within a block of Horizon observations an
// equal share of its own rate, and Summarize gives each of a rubric's
// charts an equal share of FalseAlarm. The inequality holds whatever the
// dependence between looks and between charts.
const (
	// Window is how many of the newest observations a look holds against
	// the record before them.
	Window = 150
	// MinReference is the least record before the window: a chart looks
	// first at observation MinReference + Window.
	MinReference = 50
	// Every is how many observations pass between looks.
	Every = 25
	// Horizon is the block of observations over which a chart's looks
	// share its false-alarm rate: the rate holds for the first Horizon
	// observations, and again for each further Horizon.
	Horizon = 1000
	// FalseAlarm is the chance that a steady person — whose accuracy and
	// leniency on every rubric item hold still — is flagged by chance on
	// some chart within their first Horizon calibration answers (and again
	// within each further Horizon). Summarize shares it among a rubric's
	// charts.
	FalseAlarm = 0.05
)

// FirstLook is the observation (counting from 1) at which a chart looks
// first; a shorter series cannot signal.
const FirstLook = MinReference + Window

// looksPerBlock is how many looks share a chart's rate within a block of
// Horizon observations: at most Horizon / Every, fewer in the first block.
const looksPerBlock = Horizon / Every

// Point is one observation on a chart.
type Point struct {
	// Value is the observation: 1 or 0 for a match with gold, or the
	// signed difference given − gold on a leniency chart.
	Value float64
	// P is the p-value of the look made at this observation (the smaller
	// of a leniency chart's two), 1 where no look was made; Limit is the
	// look's share of the chart's false-alarm rate (0 where none).
	P, Limit float64
	Alarm    bool // the first look whose P was within its Limit
}

// Chart is a series run through a drift chart.
type Chart struct {
	Points []Point
	// AlarmAt is the index of the first point at which the chart
	// signalled, -1 when none (or when the series is shorter than
	// FirstLook).
	AlarmAt int
}

// Drifting reports whether the chart signalled.
func (c Chart) Drifting() bool { return c.AlarmAt >= 0 }

// eventChart looks at a series of events (true: the event happened) with
// a false-alarm rate alpha per block of Horizon observations, and returns
// each point's p-value (1 where no look was made) and the first alarm.
func eventChart(events []bool, alpha float64) (ps []float64, alarmAt int) {
	ps = make([]float64, len(events))
	alarmAt = -1
	total, inWindow := 0, 0
	for i, e := range events {
		ps[i] = 1
		n := i + 1
		if e {
			total++
			inWindow++
		}
		if n > Window && events[i-Window] {
			inWindow--
		}
		if n < FirstLook || (n-FirstLook)%Every != 0 {
			continue
		}
		ps[i] = hypergeomUpper(inWindow, n, total, Window)
		if alarmAt < 0 && ps[i] <= alpha/looksPerBlock {
			alarmAt = i
		}
	}
	return ps, alarmAt
}

// hypergeomUpper is P(X ≥ x) for X the number of marked draws among draws
// taken without replacement from n things of which marked are marked.
func hypergeomUpper(x, n, marked, draws int) float64 {
	lo := max(0, draws-(n-marked))
	if x <= lo {
		return 1
	}
	hi := min(marked, draws)
	if x > hi {
		return 0
	}
	// The first term from the log-binomials, the rest by the ratio of
	// neighbouring terms.
	term := math.Exp(lchoose(marked, x) + lchoose(n-marked, draws-x) - lchoose(n, draws))
	p := 0.0
	for k := x; k <= hi; k++ {
		p += term
		term *= float64((marked-k)*(draws-k)) / float64((k+1)*(n-marked-draws+k+1))
	}
	return min(p, 1)
}

func lchoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

// AccuracyChart charts a rater's matches with gold on one rubric item,
// oldest first: a look signals when the newest Window hold more misses than
// the record before them allows by chance. alpha, in (0, 1), is the
// chart's chance of a false alarm within Horizon observations of a rater
// whose accuracy holds still (Summarize passes FalseAlarm shared among a
// rubric's charts).
func AccuracyChart(matches []bool, alpha float64) Chart {
	misses := make([]bool, len(matches))
	for i, m := range matches {
		misses[i] = !m
	}
	ps, at := eventChart(misses, alpha)
	c := Chart{Points: make([]Point, len(matches)), AlarmAt: at}
	for i, m := range matches {
		c.Points[i] = Point{Value: b2f(m), P: ps[i], Alarm: i == at}
		if isLook(i) {
			c.Points[i].Limit = alpha / looksPerBlock
		}
	}
	return c
}

// LeniencyChart charts a rater's signed differences from gold on a
// numeric rubric item (given − gold, in [−4, 4]), oldest first. It is two
// charts sharing alpha equally: one signals when the newest Window hold
// more answers above gold than the record before them allows (more
// lenient), one when they hold more below gold (more severe). Watching the
// sign rather than the size keeps each look exact and lets no odd answer
// count for more than one; an answer two points or more from gold is also
// a miss, which the accuracy chart watches.
func LeniencyChart(diffs []int, alpha float64) Chart {
	above := make([]bool, len(diffs))
	below := make([]bool, len(diffs))
	for i, d := range diffs {
		above[i], below[i] = d > 0, d < 0
	}
	up, upAt := eventChart(above, alpha/2)
	down, downAt := eventChart(below, alpha/2)
	at := upAt
	if at < 0 || (downAt >= 0 && downAt < at) {
		at = downAt
	}
	c := Chart{Points: make([]Point, len(diffs)), AlarmAt: at}
	for i, d := range diffs {
		c.Points[i] = Point{Value: float64(d), P: min(up[i], down[i]), Alarm: i == at}
		if isLook(i) {
			c.Points[i].Limit = alpha / 2 / looksPerBlock
		}
	}
	return c
}

// isLook reports whether a chart looks at the observation of index i.
func isLook(i int) bool {
	n := i + 1
	return n >= FirstLook && (n-FirstLook)%Every == 0
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

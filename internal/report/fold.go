package report

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/attune/attune/internal/agreement"
	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/scoring"
	"github.com/attune/attune/internal/store"
)

// This file folds the stream of answer sets into counts. Answer sets come
// ordered by item, so each item's answers are in hand at once and leave
// behind only counts:
//
//   - per rubric item, the count patterns of the annotators (r_ik for each
//     category, with how many items share the pattern), and of the
//     annotators with each judge;
//   - per rubric item and pair of raters, the contingency table of their
//     answers;
//   - per rubric item and judge, the contingency table of the judge against
//     the annotators' consensus, and the alt-test's tally (per annotator,
//     items compared and each side's wins);
//   - the same for the engine's pass, safety gate and final score.
//
// Every one of them is bounded by the raters and categories, not by the
// items.

// valueCode numbers the values a label can hold: 0 is "no label", the
// rest index fold.values.
type valueCode = uint8

// itemScale is what the fold knows about one rubric item.
type itemScale struct {
	key, label string
	scale      *agreement.Scale
	numeric    bool
	// cat maps a value code to its category on the scale, or -1 for a
	// label left out (ERROR, NA when missing).
	cat []int8
	// x is each category's number for leniency: its value on a numeric
	// scale, its points on a criteria rubric.
	x []float64
	// alt is the alt-test's scoring on this rubric item.
	alt agreement.AltScoring
}

// maxMemo bounds the answer vectors whose score the fold remembers; past
// it the memory starts afresh, so that it stays flat.
const maxMemo = 1 << 17

// fold holds the counts while answer sets stream in.
type fold struct {
	def    *rubric.Definition
	items  []itemScale
	keyIdx map[string]int
	values []rubric.Value // value code - 1 → value
	codeOf map[string]valueCode
	errorC valueCode // code of ERROR
	naC    valueCode // code of NA, 0 when the rubric has none

	raters  []int64       // raters[r] is the id of rater index r
	index   map[int64]int // rater id → index
	humans  int           // raters [0, humans) are annotators, the rest judges
	slotOf  []int32       // a*len(raters)+b (a<b) → pair slot, -1 when none yet
	slotAB  [][2]int      // pair slot → (a, b)
	keys    []keyCounts
	engine  engineCounts
	itemNow int64
	sets    []raterSet // the current item's answer sets
	free    [][]valueCode
	lastKey []string // the keys of the last answer set, in its order
	lastK   []int

	// scratch, reused for every item
	rv     []rated
	counts []int
	altAns []agreement.AltAnswer
}

// raterSet is one rater's answers to the current item, by rubric item.
type raterSet struct {
	r   int
	vec []valueCode
}

// rated is one rater's category on one rubric item of the current item.
type rated struct{ r, c int }

// keyCounts are the counts of one rubric item.
type keyCounts struct {
	humans    patterns
	withJudge []patterns            // per judge
	pairs     [][]int               // per pair slot: q×q, row a, column b; nil when none
	cons      [][]int               // per judge: q×q, row judge, column consensus
	alt       []*agreement.AltTally // per judge
	rated     []int                 // per rater: items with an answer on the scale
	// shared is per rater: of the items rated, for an annotator those
	// another annotator answered too, for a judge those at least one
	// annotator answered.
	shared []int
	errors int
	na     int
}

// patterns counts items by their count pattern. Patterns of up to eight
// categories of fewer than 256 ratings each, which is every rubric the
// product ships, are keyed by a number; others by bytes.
type patterns struct {
	small map[uint64]int
	at    map[string]int
	list  []agreement.Unit
	key   []byte // scratch for the key of a pattern keyed by bytes
}

func (p *patterns) add(counts []int) { p.addN(counts, 1) }

// addN counts n items of the pattern.
func (p *patterns) addN(counts []int, n int) {
	if len(counts) <= 8 {
		var k uint64
		fits := true
		for _, c := range counts {
			fits = fits && c < 256
			k = k<<8 | uint64(c&0xff)
		}
		if fits {
			if p.small == nil {
				p.small = map[uint64]int{}
			}
			if i, ok := p.small[k]; ok {
				p.list[i].Weight += n
				return
			}
			p.small[k] = len(p.list)
			p.list = append(p.list, agreement.Unit{Counts: slices.Clone(counts), Weight: n})
			return
		}
	}
	p.key = p.key[:0]
	for _, c := range counts {
		p.key = binary.AppendUvarint(p.key, uint64(c))
	}
	if p.at == nil {
		p.at = map[string]int{}
	}
	if i, ok := p.at[string(p.key)]; ok {
		p.list[i].Weight += n
		return
	}
	p.at[string(p.key)] = len(p.list)
	p.list = append(p.list, agreement.Unit{Counts: slices.Clone(counts), Weight: n})
}

// merge adds q's counts to p's.
func (p *patterns) merge(q *patterns) {
	for _, u := range q.list {
		p.addN(u.Counts, u.Weight)
	}
}

// units returns the patterns as agreement's input.
func (p *patterns) units(s *agreement.Scale) agreement.Units {
	u, err := agreement.NewUnits(s, p.list)
	if err != nil {
		panic(err) // counts are built over s
	}
	return u
}

// outcome is what the engine made of one answer set.
type outcome struct {
	score    float64
	scoreIdx int32 // the score's index among the scores seen
	hasScore bool
	pass     int8 // 0 pass, 1 fail, -1 not a criteria rubric
	gate     int8 // 0 passed, 1 failed, -1 not a criteria rubric
}

// engineCounts are the counts of the engine's outputs.
type engineCounts struct {
	memo       map[string]*outcome
	passPairs  [][]int // per pair slot: 2×2
	gatePairs  [][]int
	passUnits  patterns // over annotators
	gateUnits  patterns
	passCons   [][]int // per judge: 2×2, row judge, column majority
	gateCons   [][]int
	scoreIdx   map[float64]int32
	scores     []float64
	scorePairs []map[uint64]int // per pair slot: (score a, score b) → items
	scoreCons  []map[uint64]int // per judge: (judge's score, annotators' median) → items
	scored     int
	incomplete int
	now        []*outcome // per rater, the current item's outcomes
}

// newFold prepares the counts for the rubric, the annotators and the
// judges (rater ids), NA as a category or missing, and the alt-test's
// scoring (nil: each rubric item's default). It fails with an
// attune.ErrInvalid error when the scoring does not suit a rubric item.
func newFold(def *rubric.Definition, humans, judges []int64, naMissing bool, alt *agreement.AltScoring) (*fold, error) {
	f := &fold{def: def, keyIdx: map[string]int{}, codeOf: map[string]valueCode{}, index: map[int64]int{}}
	add := func(v rubric.Value) {
		if _, ok := f.codeOf[string(v)]; ok {
			return
		}
		f.values = append(f.values, v)
		f.codeOf[string(v)] = valueCode(len(f.values))
	}
	for _, a := range def.Answers {
		add(a.Value)
	}
	for i := range def.Items {
		for _, v := range def.Allowed(&def.Items[i]) {
			add(v)
		}
	}
	add(rubric.Error)
	if len(f.values) > 250 {
		return nil, fmt.Errorf("report: rubric %s has %d answers; at most 250 can be counted", def.Ref(), len(f.values))
	}
	f.errorC = f.codeOf[string(rubric.Error)]
	f.naC = f.codeOf[string(rubric.NA)]

	f.raters = append(append([]int64(nil), humans...), judges...)
	f.humans = len(humans)
	for i, id := range f.raters {
		f.index[id] = i
	}
	nr := len(f.raters)
	f.slotOf = make([]int32, nr*nr)
	for i := range f.slotOf {
		f.slotOf[i] = -1
	}

	for i := range def.Items {
		it := &def.Items[i]
		is, err := newItemScale(def, it, f.values, naMissing)
		if err != nil {
			return nil, err
		}
		f.items = append(f.items, is)
		f.keyIdx[it.Key] = i
		kc := keyCounts{
			withJudge: make([]patterns, len(judges)),
			cons:      make([][]int, len(judges)),
			alt:       make([]*agreement.AltTally, len(judges)),
			rated:     make([]int, nr),
			shared:    make([]int, nr),
		}
		is.alt = agreement.DefaultAltScoring(is.scale)
		if alt != nil {
			is.alt = *alt
		}
		if is.alt == agreement.AltNegRMSE && !is.scale.Numeric() {
			return nil, attune.Invalid("alt_scoring", fmt.Sprintf("neg_rmse needs numeric answers; rubric item %s answers %s (choose accuracy)", it.Key, is.scale))
		}
		q := is.scale.Len()
		for j := range kc.cons {
			kc.cons[j] = make([]int, q*q)
			if kc.alt[j], err = agreement.NewAltTally(is.scale, is.alt, len(humans)); err != nil {
				return nil, fmt.Errorf("report: rubric item %s: %w", it.Key, err)
			}
		}
		f.keys = append(f.keys, kc)
	}
	e := &f.engine
	e.memo = map[string]*outcome{}
	e.passCons, e.gateCons = make([][]int, len(judges)), make([][]int, len(judges))
	e.scoreCons = make([]map[uint64]int, len(judges))
	for j := range judges {
		e.passCons[j], e.gateCons[j] = make([]int, 4), make([]int, 4)
		e.scoreCons[j] = map[uint64]int{}
	}
	e.scoreIdx = map[float64]int32{}
	e.now = make([]*outcome, nr)
	maxQ := 2
	for _, is := range f.items {
		maxQ = max(maxQ, is.scale.Len())
	}
	f.counts = make([]int, maxQ)
	return f, nil
}

// NumericScale says whether a rubric item's scale is numeric in the report:
// every answer it allows is a number, NA aside when NA is missing. On a
// numeric scale the annotators' consensus is their median, elsewhere the
// one answer most of them gave (see consensus); the drill-down lists the
// items behind the consensus figure by the same rule.
func NumericScale(def *rubric.Definition, it *rubric.Item, naMissing bool) bool {
	n := 0
	for _, v := range def.Allowed(it) {
		if naMissing && v == rubric.NA {
			continue
		}
		if _, err := strconv.ParseFloat(string(v), 64); err != nil {
			return false
		}
		n++
	}
	return n > 0
}

// newItemScale builds the scale of one rubric item: the answers it allows
// (numbers in numeric order), without NA when NA is missing. The allowed
// answers, not the rubric's, make the scale because Gwet's AC1 and AC2
// count its categories: a criterion without NA has two, not three.
func newItemScale(def *rubric.Definition, it *rubric.Item, values []rubric.Value, naMissing bool) (itemScale, error) {
	var labels []string
	for _, v := range def.Allowed(it) {
		if naMissing && v == rubric.NA {
			continue
		}
		labels = append(labels, string(v))
	}
	numeric := NumericScale(def, it, naMissing)
	if numeric {
		slices.SortStableFunc(labels, func(a, b string) int {
			x, _ := strconv.ParseFloat(a, 64)
			y, _ := strconv.ParseFloat(b, 64)
			switch {
			case x < y:
				return -1
			case x > y:
				return 1
			}
			return 0
		})
	}
	s, err := agreement.NewScale(labels...)
	if err != nil {
		return itemScale{}, fmt.Errorf("report: rubric %s item %s: %w", def.Ref(), it.Key, err)
	}
	is := itemScale{key: it.Key, label: it.Label, scale: s, numeric: numeric,
		cat: make([]int8, len(values)+1), x: make([]float64, len(labels))}
	is.cat[0] = -1
	for i, v := range values {
		k, ok := s.Index(string(v))
		if !ok {
			k = -1
		}
		is.cat[i+1] = int8(k)
	}
	for k, l := range labels {
		if is.numeric {
			is.x[k], _ = strconv.ParseFloat(l, 64)
		} else {
			is.x[k], _ = def.Points(it, rubric.Value(l))
		}
	}
	return is, nil
}

// add takes in one answer set. Answer sets must come ordered by item.
func (f *fold) add(a *store.AnswerSetLabels) error {
	r, ok := f.index[a.RaterID]
	if !ok {
		return nil // a rater outside the report; the store was not asked to filter
	}
	if a.ItemID != f.itemNow {
		f.flush()
		f.itemNow = a.ItemID
	}
	var vec []valueCode
	if n := len(f.free); n > 0 {
		vec, f.free = f.free[n-1], f.free[:n-1]
		clear(vec)
	} else {
		vec = make([]valueCode, len(f.items))
	}
	for i, l := range a.Labels {
		// Keys come in the same order in every answer set: the one at the
		// same place last time is tried before the map.
		var k int
		if i < len(f.lastKey) && f.lastKey[i] == l.Key {
			k = f.lastK[i]
		} else {
			var ok bool
			if k, ok = f.keyIdx[l.Key]; !ok {
				return fmt.Errorf("report: item %d has a label for %q, which rubric %s does not have", a.ItemID, l.Key, f.def.Ref())
			}
			if i < len(f.lastKey) {
				f.lastKey[i], f.lastK[i] = l.Key, k
			} else {
				f.lastKey, f.lastK = append(f.lastKey, l.Key), append(f.lastK, k)
			}
		}
		c := f.code(l.Value)
		if c == 0 {
			return fmt.Errorf("report: item %d has the value %q for %s, which rubric %s does not allow", a.ItemID, l.Value, l.Key, f.def.Ref())
		}
		vec[k] = c
	}
	f.sets = append(f.sets, raterSet{r: r, vec: vec})
	return nil
}

// code returns the code of a value, or 0 for a value the rubric does not
// have. A rubric has few values: trying them in turn beats hashing.
func (f *fold) code(v string) valueCode {
	if len(f.values) > 16 {
		return f.codeOf[v]
	}
	for i, x := range f.values {
		if string(x) == v {
			return valueCode(i + 1)
		}
	}
	return 0
}

// finish counts the last item.
func (f *fold) finish() { f.flush() }

// slot returns the pair slot of raters a < b, making one if needed.
func (f *fold) slot(a, b int) int {
	i := a*len(f.raters) + b
	if s := f.slotOf[i]; s >= 0 {
		return int(s)
	}
	s := len(f.slotAB)
	f.slotOf[i] = int32(s)
	f.slotAB = append(f.slotAB, [2]int{a, b})
	for k := range f.keys {
		f.keys[k].pairs = append(f.keys[k].pairs, nil)
	}
	e := &f.engine
	e.passPairs = append(e.passPairs, nil)
	e.gatePairs = append(e.gatePairs, nil)
	e.scorePairs = append(e.scorePairs, nil)
	return s
}

// flush counts the current item and forgets it.
func (f *fold) flush() {
	if len(f.sets) == 0 {
		return
	}
	// Raters in index order (annotators first), so that pairs are a < b.
	slices.SortFunc(f.sets, func(x, y raterSet) int { return x.r - y.r })
	for k := range f.items {
		f.countKey(k)
	}
	f.countEngine()
	for _, s := range f.sets {
		f.free = append(f.free, s.vec)
	}
	f.sets = f.sets[:0]
}

// countKey counts the current item on rubric item k.
func (f *fold) countKey(k int) {
	is, kc := &f.items[k], &f.keys[k]
	q := is.scale.Len()
	rv := f.rv[:0]
	for _, s := range f.sets {
		code := s.vec[k]
		c := is.cat[code]
		if c < 0 {
			switch {
			case code == f.errorC:
				kc.errors++
			case code != 0 && code == f.naC:
				kc.na++
			}
			continue
		}
		rv = append(rv, rated{r: s.r, c: int(c)})
		kc.rated[s.r]++
	}
	f.rv = rv
	if len(rv) == 0 {
		return
	}
	counts := f.counts[:q]
	clear(counts)
	nh := 0
	for _, x := range rv {
		if x.r < f.humans {
			counts[x.c]++
			nh++
		}
	}
	if nh >= 2 {
		for _, x := range rv[:nh] {
			kc.shared[x.r]++
		}
	}
	if nh >= 1 {
		for _, x := range rv[nh:] {
			kc.shared[x.r]++
		}
	}
	if nh > 0 {
		kc.humans.add(counts)
	}
	// Annotators with each judge: the judge's answer joins theirs, and
	// the judge is compared with each annotator left out in turn.
	judged := rv[nh:]
	if nh >= 2 && len(judged) > 0 {
		f.altAns = f.altAns[:0]
		for _, x := range rv[:nh] {
			f.altAns = append(f.altAns, agreement.AltAnswer{Human: x.r, Category: x.c})
		}
	}
	for j := range kc.withJudge {
		r := f.humans + j
		c := -1
		for _, x := range judged {
			if x.r == r {
				c = x.c
				break
			}
		}
		if c < 0 {
			if nh > 0 {
				kc.withJudge[j].add(counts)
			}
			continue
		}
		if nh >= 2 {
			kc.alt[j].Add(f.altAns, c)
		}
		counts[c]++
		kc.withJudge[j].add(counts)
		counts[c]--
	}
	// Every pair of raters who both answered.
	for i, x := range rv {
		for _, y := range rv[i+1:] {
			s := f.slot(x.r, y.r)
			t := kc.pairs[s]
			if t == nil {
				t = make([]int, q*q)
				kc.pairs[s] = t
			}
			t[x.c*q+y.c]++
		}
	}
	// Judges against the annotators' consensus.
	if nh >= 2 && len(judged) > 0 {
		if c := consensus(counts, is.numeric); c >= 0 {
			for _, x := range judged {
				kc.cons[x.r-f.humans][x.c*q+c]++
			}
		}
	}
}

// consensus returns the annotators' consensus category from their counts:
// the median on a numeric scale (the lower one of an even number), the
// only most frequent answer otherwise, or -1 when two answers tie.
func consensus(counts []int, numeric bool) int {
	n := 0
	for _, c := range counts {
		n += c
	}
	if n == 0 {
		return -1
	}
	if numeric {
		target, seen := (n+1)/2, 0
		for k, c := range counts {
			seen += c
			if seen >= target {
				return k
			}
		}
	}
	best, at, tie := -1, -1, false
	for k, c := range counts {
		switch {
		case c > best:
			best, at, tie = c, k, false
		case c == best:
			tie = true
		}
	}
	if tie {
		return -1
	}
	return at
}

// countEngine scores every complete answer set of the current item and
// counts the agreement on the engine's outputs.
func (f *fold) countEngine() {
	e := &f.engine
	now := e.now
	for _, s := range f.sets {
		now[s.r] = f.score(s.vec)
	}
	defer clear(now)
	for i, x := range f.sets {
		a := now[x.r]
		if a == nil {
			continue
		}
		for _, y := range f.sets[i+1:] {
			b := now[y.r]
			if b == nil {
				continue
			}
			s := f.slot(x.r, y.r)
			if a.pass >= 0 && b.pass >= 0 {
				e.passPairs[s] = count2(e.passPairs[s], a.pass, b.pass)
				e.gatePairs[s] = count2(e.gatePairs[s], a.gate, b.gate)
			}
			if a.hasScore && b.hasScore {
				if e.scorePairs[s] == nil {
					e.scorePairs[s] = map[uint64]int{}
				}
				e.scorePairs[s][pack(a.scoreIdx, b.scoreIdx)]++
			}
		}
	}
	// The annotators' outputs, as patterns and as a consensus.
	var pass, gate [2]int
	var scores []float64
	nh := 0
	for _, x := range f.sets {
		o := now[x.r]
		if x.r >= f.humans || o == nil {
			continue
		}
		nh++
		if o.pass >= 0 {
			pass[o.pass]++
			gate[o.gate]++
		}
		if o.hasScore {
			scores = append(scores, o.score)
		}
	}
	if f.def.Kind == rubric.Criteria && nh > 0 {
		e.passUnits.add(pass[:])
		e.gateUnits.add(gate[:])
	}
	if nh < 2 {
		return
	}
	pm, gm := consensus(pass[:], false), consensus(gate[:], false)
	median := math.NaN()
	if len(scores) >= 2 {
		slices.Sort(scores)
		median = scores[(len(scores)-1)/2]
	}
	for _, x := range f.sets {
		o := now[x.r]
		if x.r < f.humans || o == nil {
			continue
		}
		j := x.r - f.humans
		if o.pass >= 0 && pm >= 0 {
			e.passCons[j][int(o.pass)*2+pm]++
		}
		if o.gate >= 0 && gm >= 0 {
			e.gateCons[j][int(o.gate)*2+gm]++
		}
		if o.hasScore && !math.IsNaN(median) {
			e.scoreCons[j][pack(o.scoreIdx, f.scoreIndex(median))]++
		}
	}
}

func count2(t []int, a, b int8) []int {
	if t == nil {
		t = make([]int, 4)
	}
	t[int(a)*2+int(b)]++
	return t
}

func pack(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

func unpack(k uint64) (int32, int32) { return int32(k >> 32), int32(uint32(k)) }

func (f *fold) scoreIndex(x float64) int32 {
	e := &f.engine
	if i, ok := e.scoreIdx[x]; ok {
		return i
	}
	i := int32(len(e.scores))
	e.scoreIdx[x] = i
	e.scores = append(e.scores, x)
	return i
}

// score returns the engine's outcome for an answer vector, or nil when the
// set misses a rubric item: the engine would score the gap as ERROR, which
// says nothing about a set brought in partial on purpose.
func (f *fold) score(vec []valueCode) *outcome {
	e := &f.engine
	for _, c := range vec {
		if c == 0 {
			e.incomplete++
			return nil
		}
	}
	e.scored++
	if o, ok := e.memo[string(vec)]; ok {
		return o
	}
	answers := make(rubric.Answers, len(vec))
	for k, c := range vec {
		answers[f.items[k].key] = f.values[c-1]
	}
	// The score of an answer set does not depend on the facts of the
	// item (they only add warnings), so none are given.
	res, err := scoring.Score(f.def, answers, rubric.Facts{})
	o := &outcome{pass: -1, gate: -1}
	if err == nil {
		if res.Score != nil {
			o.score, o.hasScore = *res.Score, true
			o.scoreIdx = f.scoreIndex(o.score)
		}
		if res.Pass != nil {
			o.pass, o.gate = 1, 0
			if *res.Pass {
				o.pass = 0
			}
			if res.SafetyGateFailed {
				o.gate = 1
			}
		}
	}
	if len(e.memo) >= maxMemo {
		clear(e.memo)
	}
	e.memo[string(vec)] = o
	return o
}

// merge adds the counts of g, a fold of other items over the same rubric
// and raters, to f's.
func (f *fold) merge(g *fold) {
	addCells := func(dst, src []int) []int {
		if src == nil {
			return dst
		}
		if dst == nil {
			dst = make([]int, len(src))
		}
		for i, x := range src {
			dst[i] += x
		}
		return dst
	}
	slots := make([]int, len(g.slotAB))
	for s, ab := range g.slotAB {
		slots[s] = f.slot(ab[0], ab[1])
	}
	for k := range f.keys {
		fk, gk := &f.keys[k], &g.keys[k]
		fk.humans.merge(&gk.humans)
		for j := range fk.withJudge {
			fk.withJudge[j].merge(&gk.withJudge[j])
			addCells(fk.cons[j], gk.cons[j])
			if err := fk.alt[j].Merge(gk.alt[j]); err != nil {
				panic(err) // folds of one rubric, raters and options
			}
		}
		for s, cells := range gk.pairs {
			fk.pairs[slots[s]] = addCells(fk.pairs[slots[s]], cells)
		}
		addCells(fk.rated, gk.rated)
		addCells(fk.shared, gk.shared)
		fk.errors += gk.errors
		fk.na += gk.na
	}
	fe, ge := &f.engine, &g.engine
	fe.scored += ge.scored
	fe.incomplete += ge.incomplete
	fe.passUnits.merge(&ge.passUnits)
	fe.gateUnits.merge(&ge.gateUnits)
	rescore := func(k uint64) uint64 {
		a, b := unpack(k)
		return pack(f.scoreIndex(ge.scores[a]), f.scoreIndex(ge.scores[b]))
	}
	for s := range g.slotAB {
		fs := slots[s]
		fe.passPairs[fs] = addCells(fe.passPairs[fs], ge.passPairs[s])
		fe.gatePairs[fs] = addCells(fe.gatePairs[fs], ge.gatePairs[s])
		if len(ge.scorePairs[s]) > 0 && fe.scorePairs[fs] == nil {
			fe.scorePairs[fs] = map[uint64]int{}
		}
		for k, n := range ge.scorePairs[s] {
			fe.scorePairs[fs][rescore(k)] += n
		}
	}
	for j := range fe.passCons {
		addCells(fe.passCons[j], ge.passCons[j])
		addCells(fe.gateCons[j], ge.gateCons[j])
		for k, n := range ge.scoreCons[j] {
			fe.scoreCons[j][rescore(k)] += n
		}
	}
}

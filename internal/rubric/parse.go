package rubric

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Parse reads one rubric definition from YAML (JSON, being YAML, works too)
// and checks it. Decoding is strict: an unknown field is an error. Every
// problem found is reported, each naming the field and, where the file
// gives one, the line; the error's text is meant for the person who wrote
// the file.
func Parse(data []byte) (*Definition, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("rubric: parse: %w", err)
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, errors.New("rubric: parse: the file is empty")
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var d Definition
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("rubric: parse: %w", decodeError(&root, err))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("rubric: parse: line %d: a rubric file holds one YAML document", extra.Line)
	}
	normalize(&d)
	c := checker{root: &root}
	c.definition(&d)
	if err := c.err(); err != nil {
		return nil, fmt.Errorf("rubric: parse %s: %w", d.Ref(), err)
	}
	return &d, nil
}

// normalize makes equal meanings look equal, so that they hash equal.
func normalize(d *Definition) {
	for i := range d.Items {
		if c := d.Items[i].Conditions; c != nil && *c == (Conditions{}) {
			d.Items[i].Conditions = nil
		}
	}
}

var (
	lineMsg    = regexp.MustCompile(`^line (\d+): (.*)$`)
	unknownMsg = regexp.MustCompile(`^field (\S+) not found in type `)
)

// decodeError rewrites the decoder's messages so that each names the field
// it is about, found from the line in the parsed node tree.
func decodeError(root *yaml.Node, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	var errs []error
	for _, msg := range te.Errors {
		m := lineMsg.FindStringSubmatch(msg)
		if m == nil {
			errs = append(errs, errors.New(msg))
			continue
		}
		line, _ := strconv.Atoi(m[1])
		if u := unknownMsg.FindStringSubmatch(m[2]); u != nil {
			path := pathAt(root, line, u[1])
			errs = append(errs, fmt.Errorf("line %d: field %s: unknown field %q", line, path, u[1]))
			continue
		}
		path := pathAt(root, line, "")
		errs = append(errs, fmt.Errorf("line %d: field %s: %s", line, path, m[2]))
	}
	return errors.Join(errs...)
}

// pathAt returns the path of the mapping key on line (named name, if name
// is set), such as "items[2].levels[0].value", or "?" if there is none.
func pathAt(root *yaml.Node, line int, name string) string {
	found := "?"
	var walk func(n *yaml.Node, path string) bool
	walk = func(n *yaml.Node, path string) bool {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				if walk(c, path) {
					return true
				}
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				p := fmt.Sprintf("%s[%d]", path, i)
				if c.Kind == yaml.ScalarNode && c.Line == line && name == "" {
					found = p
					return true
				}
				if walk(c, p) {
					return true
				}
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				p := k.Value
				if path != "" {
					p = path + "." + k.Value
				}
				if k.Line == line && (name == "" || k.Value == name) &&
					(name != "" || v.Kind == yaml.ScalarNode || v.Line != line) {
					found = p
					return true
				}
				if walk(v, p) {
					return true
				}
			}
		}
		return false
	}
	walk(root, "")
	return found
}

// nodeAt returns the node at path ("items[2].key"), or the deepest node on
// the way to it, and whether the whole path was found.
func nodeAt(root *yaml.Node, path string) (*yaml.Node, bool) {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for _, part := range strings.Split(path, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if name != "" {
			next := mapValue(n, name)
			if next == nil {
				return n, false
			}
			n = next
		}
		for rest != "" {
			idx, after, _ := strings.Cut(rest, "]")
			i, err := strconv.Atoi(idx)
			if err != nil || n.Kind != yaml.SequenceNode || i >= len(n.Content) {
				return n, false
			}
			n = n.Content[i]
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return n, true
}

func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// checker collects the problems of a decoded definition.
type checker struct {
	root *yaml.Node // nil for a definition not read from a file
	errs []error
}

func (c *checker) add(path, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if c.root != nil {
		if n, _ := nodeAt(c.root, path); n != nil && n.Line > 0 {
			c.errs = append(c.errs, fmt.Errorf("line %d: field %s: %s", n.Line, path, msg))
			return
		}
	}
	c.errs = append(c.errs, fmt.Errorf("field %s: %s", path, msg))
}

func (c *checker) err() error { return errors.Join(c.errs...) }

// has reports whether the file sets path; a definition not read from a
// file is taken to set everything.
func (c *checker) has(path string) bool {
	if c.root == nil {
		return true
	}
	_, ok := nodeAt(c.root, path)
	return ok
}

var (
	keyPattern     = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
	versionPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	itemPattern    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

func checkKey(key string) error {
	if !keyPattern.MatchString(key) {
		return fmt.Errorf("key %q: want lower-case letters, digits, '.', '_' or '-'", key)
	}
	return nil
}

func checkVersion(v string) error {
	if !versionPattern.MatchString(v) {
		return fmt.Errorf("version %q: want letters, digits, '.', '_' or '-'", v)
	}
	return nil
}

func (c *checker) definition(d *Definition) {
	switch d.Kind {
	case Likert, Criteria, Single:
	default:
		c.add("kind", "%q is not a kind; want likert, criteria or single", d.Kind)
	}
	if err := checkKey(d.Key); err != nil {
		c.add("key", "%v", err)
	}
	if err := checkVersion(d.Version); err != nil {
		c.add("version", "%v", err)
	}
	if strings.TrimSpace(d.Title) == "" {
		c.add("title", "required")
	}
	switch d.Unit {
	case Reply, Conversation, LastReply:
	default:
		c.add("unit", "%q is not a unit; want reply, conversation or last_reply", d.Unit)
	}
	c.answers(d)
	c.items(d)
	switch d.Kind {
	case Criteria:
		c.criteria(d)
	case Likert, Single:
		c.scored(d)
	}
	c.rules(d)
	c.examples(d)
}

func (c *checker) answers(d *Definition) {
	if len(d.Answers) == 0 {
		c.add("answers", "required: the rubric's answer scale")
	}
	seen := map[Value]bool{}
	for i, a := range d.Answers {
		p := fmt.Sprintf("answers[%d]", i)
		switch {
		case a.Value == "":
			c.add(p+".value", "required")
		case a.Value == Error:
			c.add(p+".value", "ERROR is reserved for a failed judge call and cannot be an answer")
		case seen[a.Value]:
			c.add(p+".value", "%q is listed twice", a.Value)
		}
		seen[a.Value] = true
		if d.Kind == Criteria {
			if a.Points == nil {
				c.add(p+".points", "required on a criteria rubric")
			} else if !(*a.Points >= 0 && *a.Points <= 1) {
				c.add(p+".points", "%v is not between 0 and 1", *a.Points)
			}
		} else {
			if _, err := strconv.Atoi(string(a.Value)); a.Value != "" && err != nil {
				c.add(p+".value", "%q is not an integer; a %s rubric answers with integers", a.Value, d.Kind)
			}
			if a.Points != nil {
				c.add(p+".points", "only criteria rubrics give points")
			}
		}
	}
}

func (c *checker) items(d *Definition) {
	if len(d.Items) == 0 {
		c.add("items", "required: at least one item")
	}
	seen := map[string]bool{}
	for i := range d.Items {
		it := &d.Items[i]
		p := fmt.Sprintf("items[%d]", i)
		switch {
		case !itemPattern.MatchString(it.Key):
			c.add(p+".key", "%q is not an item key; want letters, digits, '.', '_' or '-'", it.Key)
		case seen[it.Key]:
			c.add(p+".key", "%q is used by two items", it.Key)
		}
		seen[it.Key] = true
		if strings.TrimSpace(it.Label) == "" {
			c.add(p+".label", "required")
		}
		own := map[Value]bool{}
		for j, v := range it.Answers {
			switch {
			case d.answer(v) == nil:
				c.add(fmt.Sprintf("%s.answers[%d]", p, j), "%q is not among the rubric's answers", v)
			case own[v]:
				c.add(fmt.Sprintf("%s.answers[%d]", p, j), "%q is listed twice", v)
			}
			own[v] = true
		}
		lv := map[Value]bool{}
		for j, l := range it.Levels {
			lp := fmt.Sprintf("%s.levels[%d]", p, j)
			switch {
			case !d.Allows(it, l.Value):
				c.add(lp+".value", "%q is not an answer this item allows", l.Value)
			case lv[l.Value]:
				c.add(lp+".value", "%q is described twice", l.Value)
			}
			lv[l.Value] = true
			if strings.TrimSpace(l.Description) == "" {
				c.add(lp+".description", "required")
			}
		}
		for j, e := range it.Examples {
			ep := fmt.Sprintf("%s.examples[%d]", p, j)
			if !d.Allows(it, e.Score) {
				c.add(ep+".score", "%q is not an answer this item allows", e.Score)
			}
			if e.User == "" {
				c.add(ep+".user", "required")
			}
			if e.Response == "" {
				c.add(ep+".response", "required")
			}
		}
		for j, g := range it.Boundary {
			if strings.TrimSpace(g.Text) == "" {
				c.add(fmt.Sprintf("%s.boundary[%d].text", p, j), "required")
			}
		}
		if cond := it.Conditions; cond != nil {
			if cond.MinTurns < 0 {
				c.add(p+".conditions.min_turns", "%d is negative", cond.MinTurns)
			}
			if !d.Allows(it, NA) {
				c.add(p+".conditions", "an item with conditions must allow NA: it is the answer when they do not hold")
			}
			if cond.NAException != "" && cond.MinTurns == 0 && !cond.CrisisSignals {
				c.add(p+".conditions.na_exception", "is an exception to min_turns or crisis_signals, and neither is set")
			}
		}
		if slot := d.Judge.Slot; slot != "" && it.Prompt != "" {
			if n := strings.Count(it.Prompt, slot); n != 1 {
				c.add(p+".prompt", "holds %s %d times; want exactly once", slot, n)
			}
		}
		if d.Kind != Criteria && it.Category != "" {
			c.add(p+".category", "only criteria rubrics have categories")
		}
	}
	if d.Kind == Single && len(d.Items) > 1 {
		c.add("items", "a single rubric has exactly one item, not %d", len(d.Items))
	}
}

func (c *checker) criteria(d *Definition) {
	if len(d.Categories) == 0 {
		c.add("categories", "required on a criteria rubric")
	}
	seen := map[string]bool{}
	sum := 0.0
	for i, cat := range d.Categories {
		p := fmt.Sprintf("categories[%d]", i)
		switch {
		case cat.Key == "":
			c.add(p+".key", "required")
		case seen[cat.Key]:
			c.add(p+".key", "%q is used by two categories", cat.Key)
		case len(d.CategoryItems(cat.Key)) == 0:
			c.add(p+".key", "category %q has no items", cat.Key)
		}
		seen[cat.Key] = true
		if cat.Label == "" {
			c.add(p+".label", "required")
		}
		if !(cat.Weight >= 0 && cat.Weight <= 1) {
			c.add(p+".weight", "%v is not between 0 and 1", cat.Weight)
		}
		sum += cat.Weight
	}
	if len(d.Categories) > 0 && math.Abs(sum-1) > 1e-9 {
		c.add("categories", "the weights sum to %v; they must sum to 1", sum)
	}
	for i, it := range d.Items {
		if !seen[it.Category] {
			c.add(fmt.Sprintf("items[%d].category", i), "%q is not a category of this rubric", it.Category)
		}
	}
	if !c.has("scoring.pass_threshold") {
		c.add("scoring.pass_threshold", "required on a criteria rubric")
	} else if t := d.Scoring.PassThreshold; !(t > 0 && t <= 1) {
		c.add("scoring.pass_threshold", "%v is not above 0 and at most 1", t)
	}
	if !c.has("scoring.round") {
		c.add("scoring.round", "required on a criteria rubric: the decimals the score is rounded to")
	} else if r := d.Scoring.Round; r < 1 || r > 15 {
		c.add("scoring.round", "%d decimals; want 1 to 15", r)
	}
	c.itemList(d, "scoring.gate", d.Scoring.Gate)
	if d.Scoring.ScoreItem != "" {
		c.add("scoring.score_item", "a criteria rubric is scored by its categories, not by one item")
	}
	if len(d.Scoring.Mean) > 0 {
		c.add("scoring.mean", "only likert rubrics report a dimension mean")
	}
	for i := range d.Items {
		if !c.passable(d, &d.Items[i]) {
			c.add(fmt.Sprintf("items[%d].answers", i), "no answer of this item earns points, so it can never pass")
		}
	}
}

func (c *checker) passable(d *Definition, it *Item) bool {
	for _, v := range d.Allowed(it) {
		if p, _ := d.Points(it, v); p > 0 {
			return true
		}
	}
	return false
}

func (c *checker) scored(d *Definition) {
	if len(d.Categories) > 0 {
		c.add("categories", "only criteria rubrics have categories")
	}
	if c.root != nil && c.has("scoring.pass_threshold") || d.Scoring.PassThreshold != 0 {
		c.add("scoring.pass_threshold", "only criteria rubrics have a pass threshold")
	}
	if len(d.Scoring.Gate) > 0 {
		c.add("scoring.gate", "only criteria rubrics have a safety gate")
	}
	if d.Scoring.Round != 0 {
		c.add("scoring.round", "only criteria rubrics round a computed score")
	}
	if d.Scoring.ScoreItem == "" {
		c.add("scoring.score_item", "required: the item whose value is the score")
	} else if _, ok := d.Item(d.Scoring.ScoreItem); !ok {
		c.add("scoring.score_item", "%q is not an item of this rubric", d.Scoring.ScoreItem)
	}
	if d.Kind != Likert && len(d.Scoring.Mean) > 0 {
		c.add("scoring.mean", "only likert rubrics report a dimension mean")
	}
	c.itemList(d, "scoring.mean", d.Scoring.Mean)
}

func (c *checker) itemList(d *Definition, path string, keys []string) {
	seen := map[string]bool{}
	for i, k := range keys {
		p := fmt.Sprintf("%s[%d]", path, i)
		if _, ok := d.Item(k); !ok {
			c.add(p, "%q is not an item of this rubric", k)
		} else if seen[k] {
			c.add(p, "%q is listed twice", k)
		}
		seen[k] = true
	}
}

var ops = map[string]bool{"eq": true, "ne": true, "lt": true, "le": true, "gt": true, "ge": true}

func (c *checker) rules(d *Definition) {
	seen := map[string]bool{}
	for i, r := range d.Rules {
		p := fmt.Sprintf("rules[%d]", i)
		if r.Key == "" {
			c.add(p+".key", "required")
		} else if seen[r.Key] {
			c.add(p+".key", "%q is used by two rules", r.Key)
		}
		seen[r.Key] = true
		if len(r.When) == 0 {
			c.add(p+".when", "required: at least one clause")
		}
		for j, cl := range r.When {
			c.clause(d, fmt.Sprintf("%s.when[%d]", p, j), cl)
		}
		if _, ok := d.Item(r.Item); !ok {
			c.add(p+".item", "%q is not an item of this rubric", r.Item)
		}
		if strings.TrimSpace(r.Warning) == "" {
			c.add(p+".warning", "required")
		}
	}
}

func (c *checker) clause(d *Definition, p string, cl Clause) {
	switch {
	case cl.Item != "" && cl.Fact != "":
		c.add(p, "a clause tests an item or a fact, not both")
		return
	case cl.Fact == "crisis_signals":
		if cl.Op != "" || cl.Value != "" {
			c.add(p, "fact crisis_signals takes no op or value: it holds when crisis signals are present")
		}
		return
	case cl.Fact == "turns":
	case cl.Fact != "":
		c.add(p+".fact", "%q is not a fact; want crisis_signals or turns", cl.Fact)
		return
	case cl.Item == "":
		c.add(p, "a clause needs an item or a fact")
		return
	default:
		if _, ok := d.Item(cl.Item); !ok {
			c.add(p+".item", "%q is not an item of this rubric", cl.Item)
		}
	}
	if !ops[cl.Op] {
		c.add(p+".op", "%q is not an operator; want eq, ne, lt, le, gt or ge", cl.Op)
	}
	numeric := cl.Fact == "turns" || (cl.Op != "eq" && cl.Op != "ne")
	if _, err := strconv.ParseFloat(string(cl.Value), 64); numeric && err != nil {
		c.add(p+".value", "%q is not a number", cl.Value)
	} else if cl.Value == "" {
		c.add(p+".value", "required")
	}
}

func (c *checker) examples(d *Definition) {
	for i, ex := range d.Examples {
		p := fmt.Sprintf("examples[%d]", i)
		if len(ex.Turns) == 0 {
			c.add(p+".turns", "required")
		}
		seen := map[string]bool{}
		for j, a := range ex.Answers {
			ap := fmt.Sprintf("%s.answers[%d]", p, j)
			if _, ok := d.Item(a.Item); !ok {
				c.add(ap+".item", "%q is not an item of this rubric", a.Item)
			} else if seen[a.Item] {
				c.add(ap+".item", "%q is answered twice", a.Item)
			}
			seen[a.Item] = true
			if d.answer(a.Answer) == nil {
				c.add(ap+".answer", "%q is not among the rubric's answers", a.Answer)
			}
		}
	}
}

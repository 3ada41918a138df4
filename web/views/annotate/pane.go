package annotate

import (
	"context"
	"strings"

	"github.com/a-h/templ"
)

// Pane is the part of a rubric pane that is the same on every page of a
// rubric version: its heading and About section, each group's heading,
// and each item's texts, answer options and guidance, rendered once. A
// version never changes, so a server renders its pane once and sets it
// on every page's Rubric; the answers, notes, conditions and problems of
// the page are rendered around it. It is safe for concurrent use.
type Pane struct {
	ref    string
	head   string
	groups []paneGroup
}

type paneGroup struct {
	head  string
	items []paneItem
}

type paneItem struct {
	key  string
	head string
	// options holds each option as rendered unchecked and checked.
	options [][2]string
	naNote  string
	guide   string
}

// RenderPane renders the part of r's pane that does not depend on the
// page. r is the rubric as any page shows it; its answers, notes,
// conditions and problems are ignored.
func RenderPane(ctx context.Context, r Rubric) (*Pane, error) {
	var b strings.Builder
	render := func(c templ.Component) (string, error) {
		b.Reset()
		err := c.Render(ctx, &b)
		return b.String(), err
	}
	p := &Pane{ref: r.Ref}
	var err error
	if p.head, err = render(paneHead(r)); err != nil {
		return nil, err
	}
	for _, g := range r.Groups {
		pg := paneGroup{}
		if pg.head, err = render(groupHead(g)); err != nil {
			return nil, err
		}
		for _, it := range g.Items {
			pi := paneItem{key: it.Key}
			if pi.head, err = render(itemHead(r.Ref, it)); err != nil {
				return nil, err
			}
			for _, o := range it.Options {
				var both [2]string
				for i, checked := range []bool{false, true} {
					o.Checked = checked
					if both[i], err = render(option(it, o)); err != nil {
						return nil, err
					}
				}
				pi.options = append(pi.options, both)
			}
			if pi.naNote, err = render(naNote(it)); err != nil {
				return nil, err
			}
			if pi.guide, err = render(itemGuide(r.Ref, it)); err != nil {
				return nil, err
			}
			pg.items = append(pg.items, pi)
		}
		p.groups = append(p.groups, pg)
	}
	return p, nil
}

// Fits reports whether p was rendered from a rubric laid out as r is (the
// same version, groups, items and options). A page whose Rubric has a pane
// that does not fit renders its pane afresh, so that a pane never stands
// in for another rubric's.
func (p *Pane) Fits(r Rubric) bool { return p.fitting(r) != nil }

func (p *Pane) fitting(r Rubric) *Pane {
	if p == nil || p.ref != r.Ref || len(p.groups) != len(r.Groups) {
		return nil
	}
	for i, g := range r.Groups {
		pg := p.groups[i]
		if len(pg.items) != len(g.Items) {
			return nil
		}
		for j, it := range g.Items {
			if pg.items[j].key != it.Key || len(pg.items[j].options) != len(it.Options) {
				return nil
			}
		}
	}
	return p
}

// group returns the i-th group's parts; nil for a nil pane.
func (p *Pane) group(i int) *paneGroup {
	if p == nil {
		return nil
	}
	return &p.groups[i]
}

// item returns the i-th item's parts; nil for a nil group.
func (g *paneGroup) item(i int) *paneItem {
	if g == nil {
		return nil
	}
	return &g.items[i]
}

func (it *paneItem) option(i int, checked bool) string {
	if checked {
		return it.options[i][1]
	}
	return it.options[i][0]
}

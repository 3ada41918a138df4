package rubric

import "github.com/attune/attune/internal/wellbeing"

// FactsOf returns the facts of an item, from what the item holds: its
// number of turns, the texts of its messages (every role) and whether a
// lead marked it as mentioning suicide or self-harm. Crisis is Signalled
// when the wellbeing word list finds a term in the texts or the lead
// marked it, and Unknown otherwise: the list cannot prove a dialogue free
// of crisis signals, and neither a word nor a mark proves one present.
//
// It is the one place the facts of an item are worked out: the
// annotator's page, the API, labels imports, the consensus rule,
// adjudication and the judges' pages all call it, so that one answer set
// gets one verdict whichever way it comes.
func FactsOf(turns int, texts []string, marked bool) Facts {
	found := make([][]wellbeing.Match, len(texts))
	for i, text := range texts {
		found[i] = wellbeing.Matches(text)
	}
	return FactsFound(turns, found, marked)
}

// FactsFound is FactsOf for texts the word list has already scanned:
// found holds wellbeing.Matches of each text. A page that highlights the
// matches scans each text once.
func FactsFound(turns int, found [][]wellbeing.Match, marked bool) Facts {
	f := Facts{Turns: turns, Terms: wellbeing.TermsOf(found...), Marked: marked}
	if len(f.Terms) > 0 || marked {
		f.Crisis = Signalled
	}
	return f
}

// BehindNote reports whether an item with these facts is announced with a
// content note, and so answered only once its annotator opened the note:
// when crisis is signalled (a word of the wellbeing list, or a lead's
// mark). The page, the form post and the API all ask it.
func (f Facts) BehindNote() bool { return f.Crisis == Signalled }

package judge

import (
	"encoding/json"
	"strings"

	"github.com/attune/attune/internal/rubric"
)

// Schema is the JSON schema of a structured answer, with a name for the
// endpoints that want one.
//
// JSON holds the schema's encoded bytes rather than a map: models write
// the properties in the order the schema lists them, and the reasoning
// must come before the answer, an order a Go map would lose (it sorts
// "answer" first).
type Schema struct {
	Name string
	JSON json.RawMessage
}

// SchemaFor returns the schema of an answer to item (an item of def): an
// object with "reasoning" (a string) first, then "answer", a string
// restricted to the item's allowed answers (def.Allowed: NA only where the
// item allows it), then "turns", the turn evidence: the dialogue's turns
// (from 1) where a failing answer fails, empty otherwise, on the kinds of
// rubric that take evidence (criteria and Likert). All three are required and no other property is allowed, since strict structured
// output takes no optional property: a judge that names no turn sends an
// empty array, which is what giving no evidence means. Its name is
// "answer_" and the item key, with characters OpenAI refuses in a name
// replaced by "_".
func SchemaFor(def *rubric.Definition, item *rubric.Item) Schema {
	doc := schemaDoc{
		Type: "object",
		Properties: schemaProps{
			Reasoning: schemaProp{
				Type:        "string",
				Description: "Your reasoning about the item, written before the answer.",
			},
			Answer: schemaProp{
				Type:        "string",
				Description: "Your answer: exactly one of " + orList(def.Allowed(item)) + ".",
				Enum:        def.Allowed(item),
			},
			Turns: turnsProp(def),
		},
		Required:             []string{"reasoning", "answer"},
		AdditionalProperties: false,
	}
	if doc.Properties.Turns != nil {
		doc.Required = append(doc.Required, "turns")
	}
	return Schema{Name: schemaName(item.Key), JSON: canonicalJSON(doc)}
}

type schemaDoc struct {
	Type                 string      `json:"type"`
	Properties           schemaProps `json:"properties"`
	Required             []string    `json:"required"`
	AdditionalProperties bool        `json:"additionalProperties"`
}

// schemaProps lists the properties in the order a model should write them.
type schemaProps struct {
	Reasoning schemaProp `json:"reasoning"`
	Answer    schemaProp `json:"answer"`
	// Turns is nil in a schema without turn evidence (the probe's).
	Turns *schemaProp `json:"turns,omitempty"`
}

type schemaProp struct {
	Type        string         `json:"type"`
	Description string         `json:"description,omitempty"`
	Enum        []rubric.Value `json:"enum,omitempty"`
	Items       *schemaProp    `json:"items,omitempty"`
	Minimum     int            `json:"minimum,omitempty"`
}

// turnsProp is the schema of the turn evidence on def's answers, asked for
// in the terms of the answers that fail (rubric.Definition.Fails), so that
// a judge marks turns as a person does; nil on a kind of rubric that takes
// no evidence.
func turnsProp(def *rubric.Definition) *schemaProp {
	var fails string
	switch def.Kind {
	case rubric.Criteria:
		fails = "NO"
	case rubric.Likert:
		fails = "1 or 2"
	default:
		return nil
	}
	return &schemaProp{
		Type: "array",
		Description: "Only when your answer is " + fails + ": the numbers of the dialogue's turns (the first is 1) where the reply fails, each once. " +
			"Otherwise an empty array.",
		Items: &schemaProp{Type: "integer", Minimum: 1},
	}
}

// schemaName makes a name OpenAI accepts (letters, digits, _ and -, at
// most 64) from an item key.
func schemaName(key string) string {
	name := "answer_" + strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, key)
	if len(name) > 64 {
		name = name[:64]
	}
	return name
}

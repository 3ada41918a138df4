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
// item allows it); both required, no other property. Its name is
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
		},
		Required:             []string{"reasoning", "answer"},
		AdditionalProperties: false,
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
}

type schemaProp struct {
	Type        string         `json:"type"`
	Description string         `json:"description,omitempty"`
	Enum        []rubric.Value `json:"enum,omitempty"`
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

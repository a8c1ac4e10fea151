package openapi

import (
	"encoding/json"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"github.com/voxgate/voxgate/gateway/problem"
)

// TestDocumentIsValidOpenAPI31 checks the served document against the
// OpenAPI 3.1 schema with libopenapi-validator.
func TestDocumentIsValidOpenAPI31(t *testing.T) {
	b, err := JSON()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := libopenapi.NewDocument(b)
	if err != nil {
		t.Fatal(err)
	}
	if v := doc.GetVersion(); v != "3.1.0" {
		t.Fatalf("version %s", v)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, e := range verrs {
			t.Errorf("%s: %s (%v)", e.Message, e.Reason, e.SchemaValidationErrors)
		}
	}
	if _, err := doc.BuildV3Model(); err != nil {
		t.Fatalf("model: %v", err)
	}
}

// TestEveryProblemCodeIsDocumented checks the document's ProblemCode enum
// against the gateway's code table, both ways: a code added to package
// problem must be described, and the document names no code that does
// not exist.
func TestEveryProblemCodeIsDocumented(t *testing.T) {
	b, err := JSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas struct {
				ProblemCode struct {
					Enum []string `json:"enum"`
				} `json:"ProblemCode"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, c := range doc.Components.Schemas.ProblemCode.Enum {
		documented[c] = true
	}
	for _, c := range problem.Codes() {
		if !documented[string(c)] {
			t.Errorf("problem code %s (status %d) is not in the document's ProblemCode enum", c, problem.StatusOf(c))
		}
		delete(documented, string(c))
	}
	for c := range documented {
		t.Errorf("the document lists %s, which package problem does not have", c)
	}
}

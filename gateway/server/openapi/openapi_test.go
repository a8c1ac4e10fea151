package openapi

import (
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
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

package provenance

import (
	"context"
	"testing"

	"github.com/voxgate/voxgate/test/e2e/harness"
)

// TestAdminOrgProvenance sets an admin API organization's provenance
// settings (mark, consent, records) and checks each on its clips and
// clones; bad values name their field; the file's organizations show
// theirs.
func TestAdminOrgProvenance(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, config)
	admin, _, err := tg.Core.CreateAdminKey(context.Background(), "ops")
	if err != nil {
		t.Fatal(err)
	}
	tg.Keys["admin"] = admin

	p := tg.Do("POST", "/v1/admin/orgs", "admin", map[string]any{"id": "team-p", "name": "P",
		"provenance": map[string]any{"consent": "maybe"}}).Problem(t, 400, "validation_failed")
	harness.AssertPaths(t, p, "provenance.consent")
	p = tg.Do("POST", "/v1/admin/orgs", "admin", map[string]any{"id": "team-p", "name": "P",
		"provenance": map[string]any{"records": "no"}}).Problem(t, 400, "validation_failed")
	harness.AssertPaths(t, p, "provenance.records")
	p = tg.Do("POST", "/v1/admin/orgs", "admin", map[string]any{"id": "team-p", "name": "P",
		"provenance": map[string]any{"mark": 1}}).Problem(t, 400, "validation_failed")
	harness.AssertPaths(t, p, "provenance.mark")

	type prov struct {
		Mark    bool   `json:"mark"`
		Consent string `json:"consent"`
		Records bool   `json:"records"`
	}
	var org struct {
		Data struct {
			Provenance *prov `json:"provenance"`
		} `json:"data"`
	}
	r := tg.Do("POST", "/v1/admin/orgs", "admin", map[string]any{"id": "team-p", "name": "P",
		"providers": map[string]any{"espeak": map[string]any{"enabled": true}, "testkit": map[string]any{"enabled": true}}})
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &org)
	if got := org.Data.Provenance; got == nil || *got != (prov{Mark: true, Consent: "required", Records: true}) {
		t.Fatalf("a new organization's provenance = %+v, want the defaults", got)
	}
	tg.Do("GET", "/v1/admin/orgs/initech", "admin", nil).JSON(t, &org)
	if got := org.Data.Provenance; got == nil || *got != (prov{Mark: false, Consent: "optional", Records: true}) {
		t.Errorf("initech (gateway.yaml) provenance = %+v", got)
	}
	var k struct {
		Data struct {
			Key string `json:"key"`
		} `json:"data"`
	}
	r = tg.Do("POST", "/v1/admin/keys", "admin", map[string]any{"org": "team-p", "name": "ci"})
	if r.Status != 201 {
		t.Fatalf("key: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &k)
	tg.Keys["team-p"] = k.Data.Key

	patch := func(set map[string]any, want prov) {
		t.Helper()
		r := tg.Do("PATCH", "/v1/admin/orgs/team-p", "admin", map[string]any{"provenance": set})
		if r.Status != 200 {
			t.Fatalf("patch %v: %d %s", set, r.Status, r.Body)
		}
		r.JSON(t, &org)
		if got := org.Data.Provenance; got == nil || *got != want {
			t.Fatalf("after patch %v: provenance = %+v, want %+v", set, got, want)
		}
	}
	clip := func(wantMark string) (id string, body []byte) {
		t.Helper()
		r := tg.Do("POST", "/v1/audio/speech", "team-p", harness.SpeechBody("Provenance as the admin API set it.", "output", map[string]any{"format": "mp3"}))
		if r.Status != 200 || r.Header.Get("X-Voxgate-Mark") != wantMark {
			t.Fatalf("clip: %d, X-Voxgate-Mark %q, want %q: %s", r.Status, r.Header.Get("X-Voxgate-Mark"), wantMark, r.Body)
		}
		tags := probeTags(t, r.Body, "mp3")
		if marked := tags["VOXGATE_REQUEST_ID"] != ""; marked != (wantMark == "id3v2") {
			t.Errorf("mark %q, but the file's tags are %v", wantMark, tags)
		}
		return r.Header.Get("X-Request-Id"), r.Body
	}

	id, body := clip("id3v2")
	if rec := recordOf(t, tg, "team-p", id); rec.Record["sha256"] != sha(body) {
		t.Errorf("record %v", rec.Record)
	}
	patch(map[string]any{"mark": false}, prov{Mark: false, Consent: "required", Records: true})
	id, body = clip("off; turned off for this organization")
	if rec := recordOf(t, tg, "team-p", id); rec.Record["sha256"] != sha(body) || rec.Record["mark"] != nil {
		t.Errorf("unmarked clip's record %v", rec.Record)
	}
	patch(map[string]any{"mark": true, "records": false}, prov{Mark: true, Consent: "required", Records: false})
	id, _ = clip("id3v2")
	harness.WaitFor(t, "the clip's log row", func() bool {
		tg.FlushLogs()
		return tg.Do("GET", "/v1/logs/"+id, "team-p", nil).Status == 200
	})
	tg.Do("GET", "/v1/provenance/"+id, "team-p", nil).Problem(t, 404, "not_found")

	// Consent: required by default, optional once set so.
	src := tg.Do("POST", "/v1/audio/speech", "team-p", harness.SpeechBody("This is my voice sample for cloning.", "output", map[string]any{"format": "wav", "sampleRate": 16000}))
	up := tg.Upload("team-p", "audio/wav", src.Body)
	var m harness.Media
	up.JSON(t, &m)
	if up.Status != 201 {
		t.Fatalf("upload: %d %s", up.Status, up.Body)
	}
	clone := map[string]any{"title": "Me", "provider": "testkit", "model": "test", "mediaId": m.ID}
	harness.AssertPaths(t, tg.Do("POST", "/v1/voices", "team-p", clone).Problem(t, 400, "validation_failed"), "consent")
	patch(map[string]any{"consent": "optional"}, prov{Mark: true, Consent: "optional", Records: false})
	if r := tg.Do("POST", "/v1/voices", "team-p", clone); r.Status != 201 {
		t.Errorf("clone without consent, consent optional: %d %s", r.Status, r.Body)
	}
}

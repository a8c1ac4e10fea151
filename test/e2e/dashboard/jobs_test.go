package dashboard

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/voxgate/voxgate/test/e2e/harness"
)

// TestDashboardJobs: the Jobs view lists the organization's long-form
// jobs with their state and progress, and links a finished one's file,
// which the session downloads. A job that finished with a warning (a
// file quieter than its loudness target) is marked in its row, which
// opens to the warning's text, exactly the API's; one without has no
// marker. Its Delete button deletes the finished job, record and file
// (DELETE /v1/audio/jobs/{id}, 204), and the keyboard focus lands on the
// row that took its place, then, the last one gone, on the note that the
// list is now empty.
func TestDashboardJobs(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("drives chromium")
	}
	tg := harness.Start(t, harness.ESpeakConfig)
	// makeJob makes a job of body and waits for it to succeed; it
	// returns its id and warnings.
	makeJob := func(body map[string]any) (string, []string) {
		t.Helper()
		var made struct {
			Data struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		r := tg.Do("POST", "/v1/audio/jobs", "acme", body)
		r.JSON(t, &made)
		if r.Status != 202 {
			t.Fatalf("job: %d %s", r.Status, r.Body)
		}
		deadline := time.Now().Add(time.Minute)
		for {
			var got struct {
				Data struct {
					State    string   `json:"state"`
					Warnings []string `json:"warnings"`
				} `json:"data"`
			}
			tg.Do("GET", "/v1/audio/jobs/"+made.Data.ID, "acme", nil).JSON(t, &got)
			if got.Data.State == "succeeded" {
				return made.Data.ID, got.Data.Warnings
			}
			if time.Now().After(deadline) {
				t.Fatalf("the job did not succeed: %s", got.Data.State)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	id, warnings := makeJob(map[string]any{"model": "espeak/espeak-ng", "voice": "en", "text": "A short job for the dashboard."})
	if len(warnings) != 0 {
		t.Fatalf("warnings %q of a job without a loudness target", warnings)
	}
	// eSpeak's peaks stand far over its loudness: under a ceiling of
	// -9 dBTP no limiting lifts it to -5 LUFS, and the job says so.
	quiet, warnings := makeJob(map[string]any{"model": "espeak/espeak-ng", "voice": "en", "text": "A quiet job for the dashboard.",
		"loudness": map[string]any{"integrated": -5, "truePeak": -9}})
	if len(warnings) != 1 || !strings.Contains(warnings[0], "quieter than asked") {
		t.Fatalf("warnings %q, want the file's quieter than its target", warnings)
	}

	br := newBrowser(t)
	br.expectFailure("/ui/api/session", 401, 1)
	br.do("open", chromedp.Navigate(tg.Base+"/ui/"))
	br.wait("sign-in form", `document.querySelector("#key") !== null`)
	br.setInput("#key", tg.Keys["acme"])
	br.click(`form button[type=submit]`)
	br.wait("signed in", `document.body.innerText.includes("Jobs")`)
	br.do("jobs view", chromedp.Navigate(tg.Base+"/ui/#/jobs"))
	br.wait("the job listed as succeeded with its file", `(() => {
		const tr = document.querySelector("tr[data-job-id='`+id+`']");
		const a = tr && tr.querySelector("a[download]");
		return tr && tr.innerText.includes("succeeded") && tr.innerText.includes("1/1") && a && a.getAttribute("href") === "/ui/api/v1/audio/jobs/`+id+`/audio";
	})()`)
	// The warned job's row has a marker, closed, that opens to the
	// warning as text; the other row has none.
	row := `document.querySelector("tr[data-job-id='` + quiet + `']")`
	br.wait("the warned job's marker", `(() => {
		const d = `+row+` && `+row+`.querySelector("details.job-warnings");
		return d && !d.open && d.querySelector("summary").innerText.includes("1 warning");
	})()`)
	var marked bool
	br.js(`document.querySelector("tr[data-job-id='`+id+`'] details.job-warnings") !== null`, &marked)
	if marked {
		t.Error("the job without warnings has a warning marker")
	}
	br.click(`tr[data-job-id='` + quiet + `'] details.job-warnings summary`)
	var shown []string
	br.js(`[...`+row+`.querySelectorAll("details.job-warnings[open] li")].map((li) => li.textContent)`, &shown)
	if len(shown) != 1 || shown[0] != warnings[0] {
		t.Errorf("the row shows warnings %q, want the job's %q", shown, warnings)
	}
	br.axeCheck("jobs")

	// The link downloads the file with the session alone.
	u := harness.NewUIClient(tg)
	u.SignIn(t, tg.Keys["acme"])
	if got := u.Do("GET", "/ui/api/v1/audio/jobs/"+id+"/audio", ""); got.Status != 200 || got.Header.Get("Content-Type") != "audio/mpeg" || len(got.Body) < 1000 {
		t.Errorf("download through the session: %d %s, %d bytes", got.Status, got.Header.Get("Content-Type"), len(got.Body))
	}

	// Delete: confirmed, the row goes, the API no longer has the job.
	// The warned job first: the focus moves to the other job's row.
	br.js(`window.confirm = () => true; true`, nil)
	br.click(`tr[data-job-id='` + quiet + `'] button.danger[aria-label^="Delete the succeeded job"]`)
	br.wait("the warned job deleted", `document.querySelector("tr[data-job-id='`+quiet+`']") === null`)
	br.wait("the focus after the first delete", `document.activeElement === document.querySelector("tr[data-job-id='`+id+`'] button.danger")`)
	br.click(`tr[data-job-id='` + id + `'] button.danger[aria-label^="Delete the succeeded job"]`)
	br.wait("the job deleted", `document.querySelector("tr[data-job-id='`+id+`']") === null && document.body.innerText.includes("Deleted the job.")`)
	br.wait("the focus after the delete", `document.activeElement === document.querySelector("#jobs-empty")`)
	if got := tg.Do("GET", "/v1/audio/jobs/"+id, "acme", nil); got.Status != 404 {
		t.Errorf("the deleted job: %d %s, want 404", got.Status, got.Body)
	}
	if got := u.Do("GET", "/ui/api/v1/audio/jobs/"+id+"/audio", ""); got.Status != 404 {
		t.Errorf("the deleted job's file: %d, want 404", got.Status)
	}
	br.noProblems("jobs")
}

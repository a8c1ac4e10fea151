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
// which the session downloads; its Delete button deletes the finished
// job, record and file (DELETE /v1/audio/jobs/{id}, 204), and the
// keyboard focus lands on the note that the list is now empty.
func TestDashboardJobs(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("drives chromium")
	}
	tg := harness.Start(t, harness.ESpeakConfig)
	var made struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	r := tg.Do("POST", "/v1/audio/jobs", "acme", map[string]any{"model": "espeak/espeak-ng", "voice": "en", "text": "A short job for the dashboard."})
	r.JSON(t, &made)
	if r.Status != 202 {
		t.Fatalf("job: %d %s", r.Status, r.Body)
	}
	id := made.Data.ID
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(string(tg.Do("GET", "/v1/audio/jobs/"+id, "acme", nil).Body), `"state":"succeeded"`) {
		if time.Now().After(deadline) {
			t.Fatal("the job did not succeed")
		}
		time.Sleep(100 * time.Millisecond)
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
	br.axeCheck("jobs")

	// The link downloads the file with the session alone.
	u := harness.NewUIClient(tg)
	u.SignIn(t, tg.Keys["acme"])
	if got := u.Do("GET", "/ui/api/v1/audio/jobs/"+id+"/audio", ""); got.Status != 200 || got.Header.Get("Content-Type") != "audio/mpeg" || len(got.Body) < 1000 {
		t.Errorf("download through the session: %d %s, %d bytes", got.Status, got.Header.Get("Content-Type"), len(got.Body))
	}

	// Delete: confirmed, the row goes, the API no longer has the job.
	br.js(`window.confirm = () => true; true`, nil)
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

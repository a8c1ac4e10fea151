import { render } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import "./style.css";
import { ApiError, getJSON, onSessionLost, sendJSON, setCSRF } from "./api.js";
import { Logs } from "./logs.jsx";
import { Usage } from "./usage.jsx";
import { Voices } from "./voices.jsx";
import { Jobs } from "./jobs.jsx";
import { Playground } from "./playground.jsx";
import { Providers } from "./providers.jsx";
import { Lexicon } from "./lexicon.jsx";
import { Keys, Orgs } from "./admin.jsx";

// adminViews are what an admin key's session shows instead: it calls the
// admin API only.
const adminViews = [
  { id: "orgs", title: "Organizations", View: Orgs },
  { id: "keys", title: "Keys", View: Keys },
];

const orgViews = [
  { id: "logs", title: "Logs", View: Logs },
  { id: "usage", title: "Usage", View: Usage },
  { id: "voices", title: "Voices", View: Voices },
  { id: "lexicon", title: "Pronunciations", View: Lexicon },
  { id: "jobs", title: "Jobs", View: Jobs },
  { id: "playground", title: "Playground", View: Playground },
  { id: "providers", title: "Providers", View: Providers },
];

// views is the list the signed-in key sees (adminViews for an admin
// key); set when the session is known.
let views = orgViews;

// currentView is the view the URL's fragment names (#/usage), or prev
// when the fragment is not a view's (#main, from the skip link).
function currentView(prev) {
  if (prev && location.hash && !location.hash.startsWith("#/")) return prev;
  const id = location.hash.replace(/^#\/?/, "").split("?")[0];
  return views.find((v) => v.id === id) || views[0];
}

// useSession records which views a session sees.
function viewsFor(session) {
  views = session && session.admin ? adminViews : orgViews;
  return views;
}

// focusMain moves the keyboard focus to the start of the view's content,
// after a view change or from the skip link, so Tab goes on from there.
function focusMain() {
  const main = document.getElementById("main");
  if (main) main.focus();
}

function SignIn({ message, onSignedIn }) {
  const [key, setKey] = useState("");
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const input = useRef(null);
  // The key field has the focus on arrival (after a sign-out or an
  // expired session too), so a keyboard user types the key and presses
  // Enter.
  useEffect(() => { input.current && input.current.focus(); }, []);
  async function submit(e) {
    e.preventDefault();
    if (busy) return;
    if (!key.trim()) {
      setError("Enter an API key.");
      return;
    }
    setBusy(true);
    setError("");
    try {
      const s = await sendJSON("POST", "/session", { key: key.trim() });
      setKey("");
      onSignedIn(s);
    } catch (err) {
      setError(err instanceof ApiError ? err.message : "The gateway could not be reached.");
      // Back to the field with the wrong key selected: typing replaces it.
      if (input.current) { input.current.focus(); input.current.select(); }
    } finally {
      setBusy(false);
    }
  }
  return (
    <main class="signin" id="main">
      <h1>voxgate</h1>
      <p class="lede">Sign in with an API key of your organization, or an admin key. The key is exchanged for a session; it is not kept in the browser.</p>
      {message && <p class="notice" role="status">{message}</p>}
      <form onSubmit={submit}>
        <label for="key">API key</label>
        <input id="key" ref={input} name="key" type="password" autocomplete="off" spellcheck={false} placeholder="vxk_…" required
          value={key} onInput={(e) => setKey(e.currentTarget.value)} aria-describedby={error ? "signin-error" : undefined} />
        <button type="submit" aria-disabled={busy ? "true" : undefined}>{busy ? "Signing in…" : "Sign in"}</button>
        {error && <p id="signin-error" class="error" role="alert">{error}</p>}
      </form>
    </main>
  );
}

function App() {
  const [session, setSession] = useState(null);
  const [checked, setChecked] = useState(false);
  const [message, setMessage] = useState("");
  const [view, setView] = useState(currentView());

  useEffect(() => {
    onSessionLost((problem) => {
      setCSRF("");
      setSession(null);
      setMessage(problem && problem.code === "session_expired"
        ? "Your session expired. Sign in again."
        : (problem && problem.detail) || "You were signed out.");
    });
    getJSON("/session")
      .then((s) => { setCSRF(s.csrf_token); setSession(s); })
      .catch(() => {})
      .finally(() => setChecked(true));
    const onHash = () => {
      setView((prev) => currentView(prev));
      if (location.hash.startsWith("#/")) requestAnimationFrame(focusMain);
    };
    addEventListener("hashchange", onHash);
    return () => removeEventListener("hashchange", onHash);
  }, []);

  // An admin key's session sees the admin views, any other the
  // organization's; a fragment naming a view of the other list shows the
  // first of this one.
  const shown = session && viewsFor(session).includes(view) ? view : session ? currentView() : view;
  useEffect(() => {
    document.title = session ? `${shown.title} · voxgate` : "Sign in · voxgate";
  }, [shown, session]);

  if (!checked) return null;
  if (!session) {
    return <SignIn message={message} onSignedIn={(s) => { setCSRF(s.csrf_token); setMessage(""); setSession(s); requestAnimationFrame(focusMain); }} />;
  }
  async function signOut() {
    try {
      await sendJSON("DELETE", "/session");
    } catch { /* the cookie may already be gone */ }
    setCSRF("");
    setSession(null);
    setMessage("You signed out.");
  }
  const { View } = shown;
  return (
    <>
      <a class="skip" href="#main" onClick={(e) => { e.preventDefault(); focusMain(); }}>Skip to content</a>
      <header class="top">
        <span class="brand">voxgate</span>
        <nav aria-label="Dashboard">
          <ul>
            {views.map((v) => (
              <li key={v.id}><a href={"#/" + v.id} aria-current={v.id === shown.id ? "page" : undefined}>{v.title}</a></li>
            ))}
          </ul>
        </nav>
        <span class="who">{session.admin ? <strong>admin</strong> : <>org <strong>{session.org}</strong></>}</span>
        <button type="button" class="quiet" onClick={signOut}>Sign out</button>
      </header>
      <main id="main" tabIndex={-1}>
        <h1>{shown.title}</h1>
        <View key={shown.id} session={session} />
      </main>
    </>
  );
}

render(<App />, document.getElementById("app"));

// The dashboard's HTTP client. Everything goes to /ui/api/...: the same
// API as /v1, authenticated by the HttpOnly session cookie the browser
// sends by itself. The CSRF token lives in memory only, never in storage.

let csrf = "";
let onSignedOut = () => {};

export function setCSRF(token) {
  csrf = token || "";
}

// onSessionLost registers what happens when the server says the session
// is gone (expired, signed out, key revoked): fn(problem).
export function onSessionLost(fn) {
  onSignedOut = fn;
}

// ApiError is a failed request, carrying the problem object.
export class ApiError extends Error {
  constructor(status, problem) {
    super((problem && (problem.detail || problem.title)) || `HTTP ${status}`);
    this.status = status;
    this.problem = problem || {};
  }
}

async function problemOf(res) {
  try {
    return await res.json();
  } catch {
    return { title: res.statusText };
  }
}

// request sends method path (under /ui/api) with an optional body: a
// FormData, or anything else as JSON. It returns the Response of a
// successful request and throws ApiError otherwise.
export async function request(method, path, body) {
  const headers = {};
  let payload;
  if (body instanceof FormData) {
    payload = body;
  } else if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    payload = JSON.stringify(body);
  }
  if (method !== "GET" && csrf) headers["X-CSRF-Token"] = csrf;
  const res = await fetch("/ui/api" + path, { method, headers, body: payload, credentials: "same-origin" });
  if (!res.ok) {
    const problem = await problemOf(res);
    const err = new ApiError(res.status, problem);
    if (res.status === 401 && path !== "/session") onSignedOut(problem);
    throw err;
  }
  return res;
}

export async function getJSON(path) {
  return (await request("GET", path)).json();
}

export async function sendJSON(method, path, body) {
  const res = await request(method, path, body);
  return res.status === 204 ? null : res.json();
}

// query renders an object as a query string, leaving out empty values.
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  }
  const s = q.toString();
  return s ? "?" + s : "";
}

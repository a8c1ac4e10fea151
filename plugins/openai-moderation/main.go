// Command voxgate-openai-moderation is a content moderation plugin that
// asks an OpenAI-compatible moderation endpoint (POST {base_url}/moderations)
// whether a text may be synthesized.
//
// Settings (gateway.yaml, moderation.plugins.NAME):
//
//	base_url   the API root, default https://api.openai.com/v1
//	model      the moderation model, default omni-moderation-latest
//	threshold  optional, 0 to 1: also block when any category scores at
//	           least this much, even if the endpoint did not flag it
//	timeout    optional, bounds one HTTP call (default 30s; the gateway's
//	           ruleset timeout usually ends a call first)
//	api_key    optional fallback for the key; the gateway sends the
//	           plugin's configured api_key with every call instead
//	connect_timeout, max_idle_conns, max_attempts
//	           as for the cloud provider plugins (sdk/upstream); attempts
//	           default to 1: a moderation check is on the request path
//
// README.md has the details and the error mapping.
// A flagged text is blocked with the highest-scoring flagged category as
// the category and its score as the confidence.
package main

import "github.com/voxgate/voxgate/sdk"

func main() {
	sdk.ServeModerator(newModerator())
}

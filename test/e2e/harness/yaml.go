package harness

import "strings"

// BaseYAML is the head every test gateway.yaml starts with: a free
// loopback port, the store in the test's directory, the built plugins.
// Start fills %DIR% and %BIN%.
const BaseYAML = `
server:
  listen: 127.0.0.1:0
storage:
  path: %DIR%/voxgate.db
plugins:
  dir: %BIN%/plugins
`

// CloudProvider is the providers: entry of a cloud provider's plugin on a
// fake (managed, its key in the file), with extra lines of settings
// ("max_attempts: 1"), indented under it.
func CloudProvider(name, plugin, baseURL, key string, extra ...string) string {
	var b strings.Builder
	b.WriteString("  " + name + ":\n    plugin: " + plugin + "\n    base_url: " + baseURL + "\n    api_key: " + key + "\n    managed: true\n")
	for _, e := range extra {
		b.WriteString("    " + e + "\n")
	}
	return b.String()
}

// Package forgeload embeds the files at the repository root that the binary
// prints or serves, such as config.example.yaml.
package forgeload

import _ "embed"

// ExampleConfig is config.example.yaml: every daemon key with its meaning and
// default. `forgeload config generate` prints it.
//
//go:embed config.example.yaml
var ExampleConfig []byte

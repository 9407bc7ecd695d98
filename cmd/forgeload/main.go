// Command forgeload is a Gitea/Forgejo Actions runner with an embedded load
// engine. It is the same program as ./cmd/runner, under the name the binary
// should have, so that `go install github.com/forgeload/forgeload/cmd/forgeload@latest`
// (or `go install ./cmd/forgeload`) installs a binary named forgeload.
package main

import (
	"context"
	"os"

	"github.com/forgeload/forgeload/internal/app/cmd"
)

func main() {
	os.Exit(cmd.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

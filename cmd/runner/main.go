// Command forgeload is a Gitea/Forgejo Actions runner with an embedded load
// engine. main only builds the signal context, hands over to
// internal/app/cmd and maps the returned error to an exit code.
package main

import (
	"context"
	"os"

	"github.com/forgeload/forgeload/internal/app/cmd"
)

func main() {
	os.Exit(cmd.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// Command forgeload is a Gitea/Forgejo Actions runner with an embedded load
// engine. main only hands the arguments and standard streams to
// internal/app/cmd's Main, which owns the signal handling and maps the
// command's error to the exit code that main exits with.
package main

import (
	"context"
	"os"

	"github.com/forgeload/forgeload/internal/app/cmd"
)

func main() {
	os.Exit(cmd.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

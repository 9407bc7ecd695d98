// Package kubernetes holds no code: it is the home of the Kubernetes
// manifests beside it (a runner pool as a StatefulSet with its
// PodDisruptionBudget, the Redis for multi-host tests, and a Job-per-task
// variant) and of the test that keeps them true to the binary: every
// manifest parses, probe paths are served by the metrics server, every
// FORGELOAD_ variable is one the config package knows and its value
// validates, the commands and flags exist, selectors match, and
// docs/install.md links every file. See docs/install.md, "Kubernetes".
package kubernetes

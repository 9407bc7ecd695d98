// Package demo owns the embedded demo target that `forgeload exec --demo`
// starts on loopback: a small HTTP service with realistic, seeded latency
// (a log-normal body with a slow tail) and occasional 503 errors, so a first
// load test has something honest to measure without any external server.
package demo

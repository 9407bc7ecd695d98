package summary

import "github.com/forgeload/forgeload/internal/pkg/load"

// RunInfo says where a run came from, for the HTML report and the JSON
// result. Every field is optional; empty fields are left out of reports.
// Secrets must be masked before they are put here: reports show the fields
// as given.
type RunInfo struct {
	// Repository, Ref, Commit, Workflow, Job, RunID and Runner describe the
	// CI run that ran the test (empty for a local run).
	Repository string `json:"repository,omitempty"`
	Ref        string `json:"ref,omitempty"`
	Commit     string `json:"commit,omitempty"`
	Workflow   string `json:"workflow,omitempty"`
	Job        string `json:"job,omitempty"`
	RunID      string `json:"run_id,omitempty"`
	Runner     string `json:"runner,omitempty"`
	// Step names the load step or the config file.
	Step string `json:"step,omitempty"`
	// Version is the forgeload version that measured the run.
	Version string `json:"version,omitempty"`
	// Protocol is the protocol the run spoke, such as "http", or "mixed"
	// for a run whose endpoints use several.
	Protocol string `json:"protocol,omitempty"`
	// Config is the load config as key/value rows, secrets masked.
	Config []ConfigRow `json:"config,omitempty"`
	// Hosts are the rows of a multi-host run's workers; empty for one
	// host.
	Hosts []HostRow `json:"hosts,omitempty"`
	// Phases are the config's named phases, for a live dashboard's bands
	// (the result has its own).
	Phases []load.Phase `json:"-"`
}

// ConfigRow is one key of a load config, as shown in reports.
type ConfigRow struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// HostRow is one host's line of a multi-host run, for reports.
type HostRow struct {
	// ID and Host name the worker and its machine; Segments lists the
	// shares it drove.
	ID       string `json:"id"`
	Host     string `json:"host"`
	Segments string `json:"segments"`
	// Requests it completed, and its rate over the planned duration.
	Requests int64   `json:"requests"`
	RPS      float64 `json:"rps"`
	// Dropped arrivals, its process CPU (100 = one core) and its clock
	// offset to the coordinator's.
	Dropped     int64   `json:"dropped"`
	CPUPct      float64 `json:"cpu_pct"`
	ClockOffset string  `json:"clock_offset"`
	// Status is "ok", or why it was lost.
	Status string `json:"status"`
}

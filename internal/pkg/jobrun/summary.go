package jobrun

import (
	"context"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/client"
)

// uploadSummary publishes what step i wrote to GITHUB_STEP_SUMMARY (or the
// load step's Markdown summary) as that step's summary, when the forge
// advertises job-summary, masked by the job's masker like every log row. A
// failure is a warning in the step log: the summary is also in the log and
// the job result does not depend on it.
func (j *stepJob) uploadSummary(md []byte) {
	up := j.deps.Publisher
	if len(md) == 0 || up == nil || !client.HasCapability(j.deps.Capabilities, client.CapabilityJobSummary) {
		return
	}
	if j.callInputs != nil {
		j.Logf("The step summary is not uploaded: this step belongs to a called workflow, whose steps the forge does not know")
		return
	}
	md = []byte(j.rep.Mask(string(md)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := up.UploadSummary(ctx, j.runtimeToken(), j.i, md); err != nil {
		j.Logf("::warning::job summary not uploaded: %v", err)
	}
}

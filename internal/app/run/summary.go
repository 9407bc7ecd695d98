package run

import (
	"context"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/client"
)

// summaryUploader is the optional capability of a Client that can publish
// job summaries to the forge (the real forge client; not the terminal one
// of forgeload exec).
type summaryUploader interface {
	UploadSummary(ctx context.Context, runtimeToken string, step int, markdown []byte) error
}

// uploadSummary publishes what step i wrote to GITHUB_STEP_SUMMARY as that
// step's summary, when the forge advertises job-summary. A failure is a
// warning in the step log: the summary is also in the log and the job
// result does not depend on it.
func (j *job) uploadSummary(i int, md []byte) {
	up, ok := j.r.client.(summaryUploader)
	if len(md) == 0 || !ok || !client.HasCapability(j.r.o.Capabilities, client.CapabilityJobSummary) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := up.UploadSummary(ctx, j.runtimeToken(), i, md); err != nil {
		j.rep.Logf(i, "::warning::job summary not uploaded: %v", err)
	}
}

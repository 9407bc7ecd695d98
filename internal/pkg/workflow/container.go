package workflow

import (
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/forgeload/forgeload/internal/pkg/strictyaml"
)

// Container is a job's container: or one entry of its services:, as
// written. Values may hold ${{ }} expressions and are not evaluated.
type Container struct {
	// Image is the image reference, such as postgres:16.
	Image string
	// Env is the container's environment.
	Env map[string]string
	// Ports are the ports to publish, each as docker run -p takes them:
	// "8080", "9000:8080" or "127.0.0.1:9000:8080", optionally with /tcp
	// or /udp.
	Ports []string
	// Volumes are docker -v values: name:/path, /host/path:/path[:ro].
	Volumes []string
	// Options are extra docker create flags, such as --health-cmd.
	Options string
	// Cmd replaces the image's command (Gitea's services.<id>.cmd).
	Cmd []string
	// Credentials log in to the image's registry; nil when absent.
	Credentials *Credentials
	// Line is the 1-based line of the entry, for messages.
	Line int
}

// Credentials are a registry login.
type Credentials struct {
	Username, Password string
}

var (
	serviceIDRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)
	portRe      = regexp.MustCompile(`^(?:(?:[0-9.]+|\[[0-9a-fA-F:]+\]):)?(?:[0-9]{1,5}:)?[0-9]{1,5}(?:/(?:tcp|udp|sctp))?$`)
)

// ServiceIDs returns the ids of the job's services, sorted.
func (j *Job) ServiceIDs() []string {
	ids := make([]string, 0, len(j.Services))
	for id := range j.Services {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func parseServices(n *yaml.Node, path string) (map[string]*Container, error) {
	if isEmpty(n) {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, want(n, path, "a mapping of service ids to services (image:, ports:, ...)")
	}
	pairs, err := mapPairs(n, path)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*Container, len(pairs))
	for _, p := range pairs {
		id := p.Name
		if !serviceIDRe.MatchString(id) {
			return nil, perr(p.Key, path, "service id %q must start with a letter or _ and contain only letters, digits, - and _", id)
		}
		c, err := parseContainer(p.Value, path+"."+id)
		if err != nil {
			return nil, err
		}
		out[id] = c
	}
	return out, nil
}

// parseContainer parses a container: or a service: an image string, or a
// mapping with image: and the other keys.
func parseContainer(n *yaml.Node, path string) (*Container, error) {
	c := &Container{Line: n.Line}
	if n.Kind == yaml.ScalarNode {
		img, err := scalar(n, path)
		if err != nil {
			return nil, err
		}
		c.Image = strings.TrimSpace(img)
		if c.Image == "" {
			return nil, perr(n, path, "needs an image, such as postgres:16")
		}
		return c, nil
	}
	err := fields(n, path, "an image name or a mapping with image:", map[string]func(*yaml.Node, string) error{
		"image": func(v *yaml.Node, p string) (err error) {
			c.Image, err = scalar(v, p)
			c.Image = strings.TrimSpace(c.Image)
			return err
		},
		"env":     func(v *yaml.Node, p string) (err error) { c.Env, err = stringMap(v, p); return err },
		"volumes": func(v *yaml.Node, p string) (err error) { c.Volumes, err = stringList(v, p); return err },
		"options": func(v *yaml.Node, p string) (err error) { c.Options, err = scalar(v, p); return err },
		"cmd":     func(v *yaml.Node, p string) (err error) { c.Cmd, err = stringList(v, p); return err },
		"ports": func(v *yaml.Node, p string) (err error) {
			if c.Ports, err = stringList(v, p); err != nil {
				return err
			}
			for i, port := range c.Ports {
				port = strings.TrimSpace(port)
				c.Ports[i] = port
				if !strings.Contains(port, "${{") && !portRe.MatchString(port) {
					return perr(v, strictyaml.Index(p, i), "%q is not a port: write 8080, 9000:8080 or 127.0.0.1:9000:8080 (optionally /tcp or /udp)", port)
				}
			}
			return nil
		},
		"credentials": func(v *yaml.Node, p string) (err error) { c.Credentials, err = parseCredentials(v, p); return err },
	})
	if err != nil {
		return nil, err
	}
	if c.Image == "" {
		return nil, perr(n, path, "needs image:, such as image: postgres:16")
	}
	return c, nil
}

func parseCredentials(n *yaml.Node, path string) (*Credentials, error) {
	if isEmpty(n) {
		return nil, nil
	}
	c := &Credentials{}
	err := fields(n, path, "a mapping with username: and password:", map[string]func(*yaml.Node, string) error{
		"username": func(v *yaml.Node, p string) (err error) { c.Username, err = scalar(v, p); return err },
		"password": func(v *yaml.Node, p string) (err error) { c.Password, err = scalar(v, p); return err },
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

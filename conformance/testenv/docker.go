package testenv

import (
	"fmt"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
)

// Container describes a service image for the dockertest rung.
type Container struct {
	Repository string
	Tag        string
	Env        []string
	Cmd        []string
	// Port is the container port to publish, for example "5432/tcp".
	Port string
	// URL turns the published host:port into the service URL.
	URL func(hostPort string) string
	// Ready reports whether the service at url answers.
	Ready func(url string) error
}

// start runs the container when a Docker engine answers a ping.
func (c Container) start() (string, func(), error) {
	pool, err := dockertest.NewPool("")
	if err != nil {
		return "", nil, fmt.Errorf("%w: no Docker client: %v", ErrUnavailable, err)
	}
	if err := pool.Client.Ping(); err != nil {
		return "", nil, fmt.Errorf("%w: no Docker engine answered: %v", ErrUnavailable, err)
	}
	res, err := pool.RunWithOptions(&dockertest.RunOptions{
		Repository: c.Repository, Tag: c.Tag, Env: c.Env, Cmd: c.Cmd, ExposedPorts: []string{c.Port},
	}, func(hc *dc.HostConfig) {
		hc.AutoRemove = true
		hc.RestartPolicy = dc.RestartPolicy{Name: "no"}
	})
	if err != nil {
		return "", nil, fmt.Errorf("docker run %s:%s: %v", c.Repository, c.Tag, err)
	}
	_ = res.Expire(uint((30 * time.Minute).Seconds())) // a crashed test leaves no container behind for long
	u := c.URL(res.GetHostPort(c.Port))
	pool.MaxWait = startWait
	stop := func() { _ = pool.Purge(res) }
	if err := pool.Retry(func() error { return c.Ready(u) }); err != nil {
		stop()
		return "", nil, fmt.Errorf("container %s:%s did not answer: %v", c.Repository, c.Tag, err)
	}
	return u, stop, nil
}

"""The operator process: wiring informers, controllers and runners (`manager`), the health
and metrics endpoint (`health`), logging (`logs`), and bucket ownership (`buckets`)."""

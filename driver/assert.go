package driver

import "github.com/rancher/machine/libmachine/drivers"

var _ drivers.Driver = (*Driver)(nil)

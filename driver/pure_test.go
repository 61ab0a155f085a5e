package driver

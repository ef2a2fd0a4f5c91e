"""Attribution: name the earliest decisive faulty operation of a failed case and its error type."""

package mlxc

import "unsafe"

// GPUDevice describes MLX's GPU when it has one: Kind is "Metal" or "CUDA" (""
// when the library cannot say), Name the device's name from MLX's device
// info ("" before mlx-c 0.5.0, which has none).
type GPUDevice struct {
	Kind, Name string
}

func (g GPUDevice) String() string {
	switch {
	case g.Name != "" && g.Kind != "":
		return g.Name + " (" + g.Kind + ")"
	case g.Name != "":
		return g.Name
	case g.Kind != "":
		return g.Kind
	}
	return "a GPU"
}

// GPUInfo returns MLX's GPU and whether it has one. Failures to describe
// the device are not errors: its kind or name is then left out.
func (t *Thread) GPUInfo() (GPUDevice, bool) {
	if !t.DeviceAvailable(GPU) {
		return GPUDevice{}, false
	}
	a := t.lib.api
	var g GPUDevice
	var yes bool
	if a.metalIsAvailable(&yes) == 0 && yes {
		g.Kind = "Metal"
	} else if yes = false; a.cudaIsAvailable != nil && a.cudaIsAvailable(&yes) == 0 && yes {
		g.Kind = "CUDA"
	}
	if a.deviceInfoNew != nil && a.deviceInfoGet != nil && a.deviceInfoString != nil && a.deviceInfoFree != nil {
		dev := a.deviceNewType(GPU, 0)
		defer a.deviceFree(dev)
		info := a.deviceInfoNew()
		defer a.deviceInfoFree(info)
		var p unsafe.Pointer
		if a.deviceInfoGet(&info, dev) == 0 && a.deviceInfoString(&p, info, "device_name") == 0 {
			g.Name = goString(p)
		}
	}
	t.lib.errMsg = "" // a failure here is no later call's message
	return g, true
}

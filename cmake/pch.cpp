// Translation unit that only carries the precompiled torch header (see TorchPch.cmake).

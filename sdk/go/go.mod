module coldstart.dev/checkpoint

go 1.19

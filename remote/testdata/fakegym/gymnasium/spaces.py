"""The parts of gymnasium.spaces that remote/gym_server.py uses."""


class Discrete(object):
    def __init__(self, n, start=0):
        self.n = n
        self.start = start


class Box(object):
    def __init__(self, low, high):
        self.low = list(low)
        self.high = list(high)
        self.shape = (len(self.low),)


def flatten_space(space):
    if isinstance(space, Discrete):
        return Box([0.0] * space.n, [1.0] * space.n)
    return space


def flatten(space, x):
    if isinstance(space, Discrete):
        out = [0.0] * space.n
        out[x - space.start] = 1.0
        return out
    return list(x)

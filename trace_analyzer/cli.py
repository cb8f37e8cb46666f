import click
def main(): pass
